"""Helpers for HTTP gateway tests: a broker serving HTTP, and raw HTTP/1.1 exchanges."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

from gazette_core.broker.service import Broker
from gazette_core.testing.broker import broker_config, running_broker


@asynccontextmanager
async def http_broker(etcd_endpoint: str, file_root: str) -> AsyncIterator[Broker]:
    """A started broker serving its HTTP gateway on its one service port."""
    async with running_broker(broker_config(etcd_endpoint, file_root)) as broker:
        assert broker.http_endpoint == broker.endpoint
        yield broker


async def raw_get(url: str, timeout: float = 30.0) -> tuple[bytes, bytes, bytes]:
    """GET `url` over a bare HTTP/1.1 connection: (head, de-chunked body, trailer block).

    Client libraries drop trailers, which the gateway uses for X-Close-Error.
    """
    parts = urlsplit(url)
    async with asyncio.timeout(timeout):
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        writer.write(f"GET {target} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
                     f"Connection: close\r\n\r\n".encode())
        head = await reader.readuntil(b"\r\n\r\n")
        body = bytearray()
        while True:
            size = int((await reader.readline()).split(b";")[0], 16)
            if size == 0:
                break
            body += await reader.readexactly(size)
            await reader.readexactly(2)
        trailer = b""
        while (line := await reader.readline()) not in (b"\r\n", b""):
            trailer += line
        writer.close()
    return head, bytes(body), trailer


async def run(*argv: str, timeout: float = 30.0) -> tuple[int, bytes, bytes]:
    """Run a command without blocking the event loop (the broker serves it meanwhile)."""
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    async with asyncio.timeout(timeout):
        out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out, err


def curl(*args: str) -> tuple[str, ...]:
    """A curl command line that never uses a proxy and fails on transport errors only."""
    return ("curl", "-sS", "--noproxy", "*", "--max-time", "30", *args)
