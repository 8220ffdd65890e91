"""The HTTP gateway against a real in-process broker, with aiohttp, raw sockets and curl."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from pathlib import Path

import aetcd
import aiohttp
import pytest
import pytest_asyncio

from gazette_core.broker.http_headers import route_compact_text
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.fragment_ext import content_name, sha1_to_sum
from gazette_core.broker.service import Broker
from gazette_core.testing.broker import journal_spec, journal_stub
from gazette_core.testing.etcd import EtcdServer
from tests.broker.http_support import curl, http_broker, raw_get, run
from tests.broker.support import create

JOURNAL = "http/journal"
RANGE_TAIL = "-9223372036854775807/9223372036854775807"


@pytest_asyncio.fixture(loop_scope="session")
async def broker(etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path
                 ) -> AsyncIterator[Broker]:
    async with http_broker(etcd_server.endpoint, str(tmp_path)) as b:
        async with journal_stub(b.endpoint) as stub:
            await create(stub, journal_spec(JOURNAL))
        yield b


@pytest_asyncio.fixture(loop_scope="session")
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        yield session


def url(broker: Broker, path: str = JOURNAL, query: str = "") -> str:
    return f"{broker.http_endpoint}/{path}" + (f"?{query}" if query else "")


def route_token(broker: Broker) -> str:
    route = pb.Route(members=[broker.process_id], primary=0, endpoints=[broker.endpoint])
    return route_compact_text(route).strip()


async def put(http: aiohttp.ClientSession, broker: Broker, data: bytes) -> aiohttp.ClientResponse:
    async with http.put(url(broker), data=data) as resp:
        await resp.read()
        return resp


async def test_put_then_get_returns_the_bytes_with_gazettes_headers(
        broker: Broker, http: aiohttp.ClientSession) -> None:
    data = b"hello, gateway\n" * 100
    resp = await put(http, broker, data)
    assert resp.status == 204
    assert resp.headers["X-Commit-Begin"] == "0"
    assert resp.headers["X-Commit-End"] == str(len(data))
    assert resp.headers["X-Write-Head"] == str(len(data))
    assert resp.headers["X-Commit-SHA1-Sum"] == hashlib.sha1(data).hexdigest()
    assert resp.headers["X-Route-Token"] == route_token(broker)
    assert resp.headers["Location"] == f"{broker.endpoint}/{JOURNAL}"

    async with http.get(url(broker, query="offset=0")) as got:
        body = await got.read()
        assert got.status == 206
        headers = got.headers
    assert body == data
    fragment = pb.Fragment(journal=JOURNAL, begin=0, end=len(data), compression_codec=pb.NONE,
                           sum=sha1_to_sum(hashlib.sha1(data).digest()))
    assert headers["X-Fragment-Name"] == content_name(fragment)
    assert headers["Content-Range"] == "bytes 0" + RANGE_TAIL
    assert headers["X-Write-Head"] == str(len(data))
    assert headers["Trailer"] == "X-Close-Error"
    assert headers["X-Route-Token"] == route_token(broker)
    assert headers["Location"] == f"{broker.endpoint}/{JOURNAL}"
    assert "X-Fragment-Last-Modified" not in headers  # the fragment is not persisted yet


async def test_the_close_error_trailer_says_why_the_stream_ended(
        broker: Broker, http: aiohttp.ClientSession) -> None:
    await put(http, broker, b"0123456789")
    head, body, trailer = await raw_get(url(broker, query="offset=4"))
    assert head.startswith(b"HTTP/1.1 206 ")
    assert b"\r\nContent-Range: bytes 4" + RANGE_TAIL.encode() + b"\r\n" in head
    assert body == b"456789"
    assert trailer == b"X-Close-Error: OFFSET_NOT_YET_AVAILABLE\r\n"


async def test_blocking_get_receives_content_appended_after_it_started(
        broker: Broker, http: aiohttp.ClientSession) -> None:
    await put(http, broker, b"before;")
    received = bytearray()
    reading = asyncio.create_task(_read_blocking(http, broker, received))
    try:
        await asyncio.sleep(0.2)
        await put(http, broker, b"after-1;")
        await put(http, broker, b"after-2;")
        async with asyncio.timeout(30):
            while bytes(received) != b"after-1;after-2;":
                await asyncio.sleep(0.05)
    finally:
        reading.cancel()


async def _read_blocking(http: aiohttp.ClientSession, broker: Broker, out: bytearray) -> None:
    async with http.get(url(broker, query="offset=7&block=true"),
                        timeout=aiohttp.ClientTimeout(total=None)) as resp:
        assert resp.status == 206
        assert resp.headers["Content-Range"] == "bytes 7" + RANGE_TAIL
        async for chunk in resp.content.iter_any():
            out += chunk


async def test_head_answers_metadata_only(broker: Broker, http: aiohttp.ClientSession) -> None:
    await put(http, broker, b"0123456789")
    async with http.head(url(broker, query="offset=3")) as resp:
        assert resp.status == 206
        assert await resp.read() == b""
        assert resp.headers["Content-Range"] == "bytes 3" + RANGE_TAIL
        assert resp.headers["X-Write-Head"] == "10"
        assert "Trailer" not in resp.headers


@pytest.mark.parametrize(("method", "path", "query", "text"), [
    ("GET", "no/such/journal", "", "JOURNAL_NOT_FOUND"),
    ("HEAD", "no/such/journal", "", ""),
])
async def test_unknown_journal_is_404(broker: Broker, http: aiohttp.ClientSession, method: str,
                                      path: str, query: str, text: str) -> None:
    async with http.request(method, url(broker, path, query)) as resp:
        assert resp.status == 404
        assert (await resp.text()).strip() == text


@pytest.mark.parametrize(("path", "query", "text"), [
    (JOURNAL, "offset=abc", 'schema: error converting value for "offset"'),
    (JOURNAL, "block=maybe", 'schema: error converting value for "block"'),
    (JOURNAL, "foo=1", 'schema: invalid path "foo"'),
    (JOURNAL, "foo=1&bar=2", 'schema: invalid path "foo" (and 1 other error)'),
    (JOURNAL, "offset=-2", "offset: expected offset >= -1 (got -2)"),
    ("/", "", "journal"),
])
async def test_bad_read_requests_are_400(broker: Broker, http: aiohttp.ClientSession, path: str,
                                         query: str, text: str) -> None:
    async with http.get(url(broker, path, query)) as resp:
        assert resp.status == 400
        assert text in await resp.text()


async def test_query_names_match_case_insensitively(broker: Broker,
                                                    http: aiohttp.ClientSession) -> None:
    await put(http, broker, b"0123456789")
    async with http.get(url(broker, query="OFFSET=6&Block=false")) as resp:
        assert resp.status == 206
        assert await resp.read() == b"6789"


async def test_reading_past_the_write_head_without_blocking_is_416(
        broker: Broker, http: aiohttp.ClientSession) -> None:
    await put(http, broker, b"0123456789")
    async with http.get(url(broker, query="offset=1000")) as resp:
        assert resp.status == 416
        assert (await resp.text()) == "OFFSET_NOT_YET_AVAILABLE\n"
        assert resp.headers["X-Write-Head"] == "10"


async def test_put_failures(broker: Broker, http: aiohttp.ClientSession) -> None:
    async with http.put(url(broker, "no/such/journal"), data=b"x") as resp:
        assert resp.status == 500
        assert await resp.text() == "JOURNAL_NOT_FOUND\n"
    async with http.put(url(broker, query="offset=0"), data=b"x") as resp:
        assert resp.status == 400
        assert await resp.text() == 'schema: invalid path "offset"\n'
    async with http.put(f"{broker.http_endpoint}//", data=b"x") as resp:
        assert resp.status == 400
    async with http.post(url(broker), data=b"x") as resp:
        assert resp.status == 400
        assert await resp.text() == "unknown method: POST\n"


async def test_large_put_is_one_atomic_append(broker: Broker, http: aiohttp.ClientSession
                                              ) -> None:
    data = bytes(range(256)) * 4096  # 1 MiB: many chunks of one append
    resp = await put(http, broker, data)
    assert resp.status == 204
    assert resp.headers["X-Commit-SHA1-Sum"] == hashlib.sha1(data).hexdigest()
    assert int(resp.headers["X-Commit-End"]) - int(resp.headers["X-Commit-Begin"]) == len(data)


async def test_curl_put_and_get(broker: Broker, tmp_path: Path) -> None:
    path = tmp_path / "payload"
    path.write_bytes(b"from curl\n")
    code, out, err = await run(*curl("-i", "-X", "PUT", "--data-binary", f"@{path}", url(broker)))
    assert code == 0, err
    assert out.startswith(b"HTTP/1.1 204 ")
    digest = hashlib.sha1(path.read_bytes()).hexdigest()
    assert f"X-Commit-SHA1-Sum: {digest}\r\n".encode() in out
    code, out, err = await run(*curl(url(broker, query="offset=0")))
    assert (code, out) == (0, b"from curl\n"), err
    code, out, err = await run(*curl("-I", url(broker, query="offset=0")))
    assert code == 0, err
    assert out.startswith(b"HTTP/1.1 206 ") and b"X-Write-Head: 10\r\n" in out


async def test_stopping_the_broker_ends_a_blocking_get(etcd: aetcd.Client, etcd_server: EtcdServer,
                                                      tmp_path: Path) -> None:
    async with http_broker(etcd_server.endpoint, str(tmp_path)) as broker:
        async with journal_stub(broker.endpoint) as stub:
            await create(stub, journal_spec(JOURNAL))
        session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60))
        async with session:
            reading = asyncio.create_task(_read_blocking(session, broker, bytearray()))
            await put(session, broker, b"first")  # the GET below waits at offset 7
            await asyncio.sleep(0.2)
            async with asyncio.timeout(30):
                await broker.stop(drain_timeout=1.0)
                with pytest.raises(aiohttp.ClientError):
                    await reading
