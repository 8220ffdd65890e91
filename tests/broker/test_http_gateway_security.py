"""The HTTP gateway of brokers with auth keys (Authorization passes through) and with TLS."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import aetcd
import aiohttp
import pytest_asyncio

from gazette_core.broker.client.channel import ClientConfig, close_channels, journal_stub
from gazette_core.server import auth
from gazette_core.server.tls import ClientTLS
from gazette_core.testing.broker import broker_config, journal_spec, running_broker
from gazette_core.testing.etcd import EtcdServer
from tests.broker.auth_support import KEY, KEYS, bearer, upsert, wait_primary
from tests.broker.support import create
from tests.server.certs import TestCA


@pytest_asyncio.fixture(loop_scope="session", autouse=True)
async def _fresh_channels() -> AsyncIterator[None]:
    yield
    await close_channels()  # channels to this test's brokers end with it


def _authorization(capability: int) -> dict[str, str]:
    return {"Authorization": f"Bearer {auth.mint(KEY, capability, None, auth.HOUR_S)}"}


async def test_the_authorization_header_authorizes_the_rpcs(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path) -> None:
    config = broker_config(etcd_server.endpoint, str(tmp_path), auth_keys=KEYS, http_port=0)
    async with running_broker(config) as broker, aiohttp.ClientSession() as http:
        stub = journal_stub(broker.endpoint)
        await stub.Apply(upsert(journal_spec("auth/http")), metadata=bearer())
        await wait_primary(stub, "auth/http")
        url = f"{broker.http_endpoint}/auth/http"

        async with http.put(url, data=b"no token") as resp:
            assert resp.status == 500
            assert "UNAUTHENTICATED" in await resp.text()
        async with http.put(url, data=b"read only", headers=_authorization(auth.READ)) as resp:
            assert resp.status == 500
            assert "APPEND" in await resp.text()
        async with http.put(url, data=b"granted", headers=_authorization(auth.APPEND)) as resp:
            assert resp.status == 204
        async with http.get(url, headers=_authorization(auth.READ)) as resp:
            assert resp.status == 206
            assert await resp.read() == b"granted"
        async with http.get(url) as resp:
            assert resp.status == 500
            assert "UNAUTHENTICATED" in await resp.text()


async def test_refused_appends_report_the_brokers_status_however_the_refusal_races_the_body(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path) -> None:
    """The broker refuses a tokenless append before reading its body; the gateway is
    still writing it then, and must answer with the broker's status, not grpc's stand-in
    for a failed write ("Internal error from Core"), which many large bodies provoke."""
    config = broker_config(etcd_server.endpoint, str(tmp_path), auth_keys=KEYS, http_port=0)
    async with running_broker(config) as broker, aiohttp.ClientSession() as http:
        stub = journal_stub(broker.endpoint)
        await stub.Apply(upsert(journal_spec("auth/racing")), metadata=bearer())
        await wait_primary(stub, "auth/racing")
        url = f"{broker.http_endpoint}/auth/racing"
        body = b"x" * (2 << 20)

        async def put() -> tuple[int, str]:
            async with http.put(url, data=body) as resp:
                return resp.status, await resp.text()

        answers = await asyncio.gather(*(put() for _ in range(40)))
        assert [a for a in answers if "UNAUTHENTICATED" not in a[1]] == []
        assert {status for status, _ in answers} == {500}


async def test_a_tls_broker_serves_https(etcd: aetcd.Client, etcd_server: EtcdServer,
                                              tmp_path: Path) -> None:
    ca = TestCA(tmp_path)
    server, peer = ca.issue("gw-server"), ca.issue("gw-peer")
    config = broker_config(etcd_server.endpoint, str(tmp_path), http_port=0,
                           server_cert_file=server.cert, server_cert_key_file=server.key,
                           peer_cert_file=peer.cert, peer_cert_key_file=peer.key,
                           peer_ca_file=ca.pem.cert)
    trust = ssl.create_default_context(cafile=ca.pem.cert)
    connector = aiohttp.TCPConnector(ssl=trust)
    async with running_broker(config) as broker, aiohttp.ClientSession(connector=connector) as http:
        assert broker.endpoint.startswith("https://") and broker.http_gateway is not None
        assert broker.http_endpoint == f"https://127.0.0.1:{broker.http_gateway.port}"
        await create(journal_stub(broker.endpoint, ClientConfig(tls=ClientTLS(
            ca_file=ca.pem.cert))), journal_spec("tls/http"))
        async with http.put(f"{broker.http_endpoint}/tls/http", data=b"over tls") as resp:
            assert resp.status == 204
        async with http.get(f"{broker.http_endpoint}/tls/http") as resp:
            assert (resp.status, await resp.read()) == (206, b"over tls")


async def _closed_by_server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                            trickle: bytes = b"") -> bytes:
    """What the server sent before closing, while `trickle` dribbles out a byte at a time."""
    received = b""
    for byte in [trickle[i:i + 1] for i in range(len(trickle))] + [b""] * 100:
        if byte and not writer.is_closing():
            with contextlib.suppress(ConnectionError):
                writer.write(byte)
        try:
            async with asyncio.timeout(0.2):
                while chunk := await reader.read(1024):
                    received += chunk
                return received  # end of stream: the server closed
        except TimeoutError:
            continue
        except ConnectionError:
            return received
    raise AssertionError(f"the server kept the connection open (received {received!r})")


async def test_a_half_sent_request_head_is_closed_within_the_header_timeout(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path) -> None:
    config = broker_config(etcd_server.endpoint, str(tmp_path), http_port=0,
                           http_header_timeout=1.0)
    async with running_broker(config) as broker:
        port = broker.http_gateway.port if broker.http_gateway else 0
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /some/journal HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        # Trickling further header bytes does not keep the connection open either.
        assert await _closed_by_server(reader, writer, b"X-Slow: " + b"z" * 20) == b""
        writer.close()


async def test_a_stalled_request_body_is_refused_within_the_idle_timeout(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path) -> None:
    config = broker_config(etcd_server.endpoint, str(tmp_path), http_port=0,
                           http_idle_timeout=1.0)
    async with running_broker(config) as broker, aiohttp.ClientSession() as http:
        await create(journal_stub(broker.endpoint), journal_spec("slow/put"))
        port = broker.http_gateway.port if broker.http_gateway else 0
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"PUT /slow/put HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n"
                     b"\r\n" + b"x" * 10)
        received = await _closed_by_server(reader, writer)
        writer.close()
        assert received.startswith(b"HTTP/1.1 408 ")
        assert b"request body sent nothing for 1s" in received
        async with http.get(f"{broker.http_endpoint}/slow/put?block=false") as resp:
            assert resp.status == 416  # nothing of the stalled body was appended
