"""A broker's one service port carries large appends and reads intact, over gRPC and HTTP.

The broker is in-process with its default listening: gRPC relayed through
the front, HTTP handed to the gateway, both on `broker.endpoint`.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
from collections.abc import Callable
from pathlib import Path

import aetcd
import aiohttp

from gazette_core.broker.client.appender import append
from gazette_core.broker.client.channel import close_channels, journal_stub
from gazette_core.broker.client.reader import Reader
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.service import Broker
from gazette_core.testing.broker import broker_config, journal_spec, running_broker
from gazette_core.testing.etcd import EtcdServer
from tests.broker.support import create

MiB = 1 << 20


async def _read_back(broker: Broker, journal: str, size: int) -> bytes:
    got = bytearray()
    reader = Reader(journal_stub(broker.endpoint), pb.ReadRequest(journal=journal, block=True))
    try:
        async for chunk in reader:
            got += chunk
            if len(got) >= size:
                break
    finally:
        reader.close()
    return bytes(got)


async def test_large_appends_and_reads_through_the_one_port_are_byte_identical(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path) -> None:
    config = broker_config(etcd_server.endpoint, str(tmp_path))
    async with running_broker(config) as broker:
        assert broker.http_endpoint == broker.endpoint
        await create(journal_stub(broker.endpoint), journal_spec("big/grpc", length=64 * MiB),
                     journal_spec("big/http", length=64 * MiB))
        sent = os.urandom(24 * MiB)
        await append(journal_stub(broker.endpoint), "big/grpc", sent)
        got = await _read_back(broker, "big/grpc", len(sent))
        assert hashlib.sha256(got).digest() == hashlib.sha256(sent).digest()

        body = os.urandom(12 * MiB)
        async with aiohttp.ClientSession() as http:
            async with http.put(f"{broker.endpoint}/big/http", data=body) as resp:
                assert resp.status == 204
            async with http.get(f"{broker.endpoint}/big/http?offset=0&block=false") as resp:
                assert resp.status == 206
                assert hashlib.sha256(await resp.read()).digest() == \
                    hashlib.sha256(body).digest()
        await close_channels()


# Reads a journal blocking, takes one response, then stalls: what the broker sends next
# piles up unread, so the process dying resets its connection (RST, not FIN).
STALLED_READER = """
import sys, time, grpc
from gazette_core.broker.protocol import protocol_pb2 as pb, protocol_pb2_grpc as pb_grpc
channel = grpc.insecure_channel(sys.argv[1])
reads = pb_grpc.JournalStub(channel).Read(pb.ReadRequest(journal=sys.argv[2], block=True))
next(reads)
print("reading", flush=True)
time.sleep(600)
"""


async def _until(predicate: Callable[[], bool]) -> None:
    async with asyncio.timeout(30):
        while not predicate():
            await asyncio.sleep(0.02)


async def test_a_client_reset_mid_read_closes_its_relay_and_the_broker_serves_on(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path) -> None:
    config = broker_config(etcd_server.endpoint, str(tmp_path))
    async with running_broker(config) as broker:
        await create(journal_stub(broker.endpoint), journal_spec("reset/me", length=64 * MiB))
        await append(journal_stub(broker.endpoint), "reset/me", os.urandom(16 * MiB))
        front = broker.serving.front
        assert front is not None
        before = len(front._connections)
        reader = await asyncio.create_subprocess_exec(
            sys.executable, "-c", STALLED_READER, f"127.0.0.1:{broker.port}", "reset/me",
            stdout=asyncio.subprocess.PIPE)
        try:
            assert reader.stdout is not None
            assert await reader.stdout.readline() == b"reading\n"
            assert len(front._connections) == before + 1
        finally:
            reader.kill()
            await reader.wait()
        await _until(lambda: len(front._connections) == before)
        await append(journal_stub(broker.endpoint), "reset/me", b"after the reset")
        got = await _read_back(broker, "reset/me", 16 * MiB + 15)
        assert got.endswith(b"after the reset")
        await close_channels()
