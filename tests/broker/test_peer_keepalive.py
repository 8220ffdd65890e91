"""Keepalive: a replica notices a primary whose connection went silent; peers are probed.

A process opens a Replicate stream to a broker, as a journal's primary does,
and is then SIGSTOPped: its connection stays open but answers nothing, and
the route does not change. Only the broker's pings can tell that the stream
is dead and free the spool it holds.

Peer channels also probe their peer while connected (what makes the pings
welcome to Go servers, see tests/broker/test_go_peer_keepalive.py), and
stop when the channel closes.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import aetcd
import grpc
import pytest

from gazette_core.broker import keepalive
from gazette_core.broker.client.channel import close_channels, dial
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.testing.broker import broker_config, journal_spec, journal_stub, running_broker
from gazette_core.testing.etcd import EtcdServer
from tests.broker.support import append, create, read_all

# With 1 s pings answered within 1 s, the stream is dropped a few seconds after
# the freeze; appends to the journal then go through.
SILENT_LIMIT_S = 8.0

_PRIMARY = """
import asyncio, sys
import grpc
from gazette_core.broker.pipeline import REPLICATE_METHOD
from gazette_core.broker.protocol import protocol_pb2 as pb

async def main() -> None:
    async with grpc.aio.insecure_channel(sys.argv[1]) as channel:
        call = channel.stream_stream(REPLICATE_METHOD, request_serializer=None,
                                     response_deserializer=pb.ReplicateResponse.FromString)()
        await call.write(bytes.fromhex(sys.argv[2]))
        print(pb.Status.Name((await call.read()).status), flush=True)
        await asyncio.sleep(3600)

asyncio.run(main())
"""


async def test_stream_from_a_silent_primary_is_dropped(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keepalive, "PING_INTERVAL_MS", 1000)
    monkeypatch.setattr(keepalive, "PING_TIMEOUT_MS", 1000)
    journal = "keepalive/silent"
    config = broker_config(etcd_server.endpoint, str(tmp_path))
    async with running_broker(config) as broker, journal_stub(broker.endpoint) as stub:
        await create(stub, journal_spec(journal))
        assert (await append(stub, journal, b"before\n")).status == pb.OK
        replica = broker.resolver.replicas[journal]
        async with replica.pipeline_lock:  # the broker's own pipeline makes way
            await replica.close_pipeline()
        header = (await read_all(stub, pb.ReadRequest(journal=journal, do_not_proxy=True,
                                                      offset=7)))[0].header
        first = pb.ReplicateRequest(header=header, proposal=replica.spool.fragment,
                                    registers=replica.spool.registers, acknowledge=True,
                                    deprecated_journal=journal)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", _PRIMARY, broker.endpoint.split("://", 1)[-1],
            first.SerializeToString().hex(), stdout=asyncio.subprocess.PIPE)
        try:
            assert proc.stdout is not None
            async with asyncio.timeout(30):
                assert await proc.stdout.readline() == b"OK\n"  # it holds the spool now
            os.kill(proc.pid, signal.SIGSTOP)
            async with asyncio.timeout(SILENT_LIMIT_S):
                resp = await append(stub, journal, b"after\n")
            assert (resp.status, resp.commit.begin) == (pb.OK, 7)
        finally:
            proc.kill()
            await proc.wait()


async def test_a_peer_channel_probes_while_connected_until_closed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keepalive, "PING_INTERVAL_MS", 200)
    probed = asyncio.Event()
    probes = 0

    async def answer(request: bytes, _: object) -> bytes:
        nonlocal probes
        probes += 1
        if probes == 3:
            probed.set()
        return b""

    server = grpc.aio.server()
    service, method = keepalive.PROBE_METHOD.strip("/").split("/")
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(
        service, {method: grpc.unary_unary_rpc_method_handler(answer)})])
    target = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    await server.start()
    try:
        channel = dial(target, keepalive.peer_config())
        async with asyncio.timeout(30):
            await channel.channel_ready()  # the watch never connects; once connected, it probes
            await probed.wait()
        await close_channels()
        watches = [t for t in asyncio.all_tasks() if t.get_name().endswith(f"to {target}")]
        assert watches == []
    finally:
        await server.stop(None)
