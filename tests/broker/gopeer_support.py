"""The Go peer of keepalive tests (tests/broker/gopeer): built once a session, run as a process.

It is built in GOPATH mode from Debian's packaged grpc-go (golang-google-grpc-dev,
installed by `make install` with golang-go), so no module is fetched. As a
server it is a grpc-go server with default ServerOptions, like a Go broker's;
as a client it holds one stream and reports what arrives on it.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

SOURCE = Path(__file__).parent / "gopeer"
REPO = Path(__file__).parents[2]
GOCODE = "/usr/share/gocode"  # where Debian's Go library packages live
BUILD_TIMEOUT_S = 600.0
START_TIMEOUT_S = 10.0


def build(directory: Path) -> Path:
    """Build the Go peer into `directory`, offline; its path."""
    binary = directory / "gopeer"
    env = {**os.environ, "GO111MODULE": "off", "GOPROXY": "off", "GOFLAGS": "",
           "GOPATH": f"{directory / 'gopath'}:{GOCODE}"}
    env.setdefault("GOCACHE", str(REPO / ".cache" / "go-build"))  # kept between sessions
    try:
        done = subprocess.run(["go", "build", "-o", str(binary), "."], cwd=SOURCE, env=env,
                              capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except FileNotFoundError:
        raise AssertionError("`go` is not installed: run `make install`") from None
    assert done.returncode == 0, f"building {SOURCE} failed:\n{done.stderr}"
    return binary


@dataclass
class GoServer:
    process: asyncio.subprocess.Process
    target: str  # host:port

    @property
    def endpoint(self) -> str:
        return f"http://{self.target}"


@asynccontextmanager
async def go_server(binary: Path) -> AsyncIterator[GoServer]:
    """A grpc-go server with default options, echoing protocol.Journal streams."""
    proc = await asyncio.create_subprocess_exec(binary, "serve", stdout=asyncio.subprocess.PIPE)
    try:
        assert proc.stdout is not None
        async with asyncio.timeout(START_TIMEOUT_S):
            line = (await proc.stdout.readline()).decode()
        assert line.startswith("listening "), f"the Go server did not start: {line!r}"
        yield GoServer(proc, line.split()[1])
    finally:
        proc.kill()  # also ends a stopped (SIGSTOP) process
        await proc.wait()


class GoClient:
    """A grpc-go client holding one stream; `next_line()` is what it reported next."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    async def next_line(self) -> str:
        """Its next report: "message HEX" for a response, "ended CODE: DETAILS" at the end."""
        assert self.process.stdout is not None
        return (await self.process.stdout.readline()).decode().rstrip("\n")


@asynccontextmanager
async def go_client(binary: Path, target: str, method: str, request: bytes,
                    ping_interval: str) -> AsyncIterator[GoClient]:
    """A grpc-go client that opened `method` on `target` with `request` and half-closed.

    `ping_interval` is a Go duration: its keepalive pings' interval ("0": grpc-go's
    default of none).
    """
    proc = await asyncio.create_subprocess_exec(
        binary, "hold", target, method, request.hex(), ping_interval,
        stdout=asyncio.subprocess.PIPE)
    try:
        yield GoClient(proc)
    finally:
        proc.kill()
        await proc.wait()
