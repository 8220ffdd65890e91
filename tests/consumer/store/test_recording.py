"""LoopRecording: record calls from threads reach the recording in order, errors surface."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

import pytest

from gazette_core.consumer.store.recording import LoopRecording, RecordingBrokenError


class Log:
    """A Recording that notes every call, failing removes of `bad`."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def open_file(self, path: str, *, create: bool, truncate: bool) -> Log:
        self.calls.append(f"open {path}")
        return self

    def write_at(self, data: bytes, offset: int) -> None:
        self.calls.append(f"write {data.decode()}@{offset}")

    def remove(self, path: str) -> None:
        if path == "/bad":
            raise RuntimeError("inconsistent remove of /bad")
        self.calls.append(f"remove {path}")

    def link(self, src: str, dst: str) -> None:
        self.calls.append(f"link {src} {dst}")

    def rename(self, src: str, dst: str) -> None:
        self.calls.append(f"rename {src} {dst}")

    async def barrier(self, wait_for: Awaitable[None] | None = None) -> None:
        self.calls.append("barrier")


def record(recording: LoopRecording, count: int) -> None:
    for i in range(count):
        file = recording.open_file(f"/f{i}", create=True, truncate=False)
        file.write_at(b"x", i)
        recording.rename(f"/f{i}", f"/g{i}")


async def test_calls_from_a_thread_keep_their_order() -> None:
    log = Log()
    recording = LoopRecording(log, asyncio.get_running_loop())
    await asyncio.to_thread(record, recording, 200)
    await recording.barrier(None)
    want = [c for i in range(200) for c in (f"open /f{i}", f"write x@{i}", f"rename /f{i} /g{i}")]
    assert log.calls == [*want, "barrier"]


async def test_a_failed_record_call_fails_every_later_barrier() -> None:
    log = Log()
    recording = LoopRecording(log, asyncio.get_running_loop())
    await asyncio.to_thread(recording.remove, "/bad")
    await asyncio.to_thread(recording.remove, "/ok")
    with pytest.raises(RecordingBrokenError, match="inconsistent remove of /bad"):
        await recording.barrier(None)
    with pytest.raises(RecordingBrokenError):
        await recording.barrier(None)
    assert log.calls == []
