"""Helpers for tests of the gRPC statuses a broker answers: the call's error and the log."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import Awaitable
from pathlib import Path

import grpc
import pytest
from aetcd import rpc

from gazette_core.keyspace.etcd_util import connect
from gazette_core.testing.etcd import ETCD_BINARY, HOST, free_port

# What a status message must never carry: Python internals and multi-line dumps.
LEAKS = ("class", "Traceback", "debug_error_string", "AioRpcError", "Error(", "\n")


async def rpc_error(call: Awaitable[object]) -> grpc.aio.AioRpcError:
    """The error `call` fails with (it must fail)."""
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call
    return err.value


def assert_clean(err: grpc.aio.AioRpcError, code: grpc.StatusCode, message: str) -> None:
    """`err` has `code` and exactly the one-line `message`, free of Python internals."""
    details = err.details() or ""
    assert (err.code(), details) == (code, message)
    assert not [leak for leak in LEAKS if leak in details], details


def tracebacks(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Log records that carry a traceback, as text."""
    return [r.getMessage() for r in caplog.records
            if r.exc_info is not None or "Traceback" in r.getMessage()]


class PausableEtcd:
    """An etcd process on fixed ports and data dir that can be killed and started again."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.client_port, self.peer_port = free_port(), free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{HOST}:{self.client_port}"

    async def start(self) -> None:
        peer = f"http://{HOST}:{self.peer_port}"
        self.proc = subprocess.Popen(
            [ETCD_BINARY, "--name", "paused", "--data-dir", str(self.directory),
             "--listen-client-urls", self.endpoint, "--advertise-client-urls", self.endpoint,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", f"paused={peer}"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = await connect(self.endpoint)
        try:
            for _ in range(200):  # until it serves reads
                with contextlib.suppress(grpc.aio.AioRpcError):
                    await client.kvstub.Range(rpc.RangeRequest(key=b"\0", count_only=True))
                    return
                await asyncio.sleep(0.05)
            raise AssertionError("etcd did not start")
        finally:
            await client.close()

    async def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            await asyncio.to_thread(self.proc.wait)
            self.proc = None
