"""The recorded directory: every mutation, truncates included, reaches the recording."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from gazette_core.consumer.store.recorded_dir import FLUSH_BYTES, RecordedDir
from gazette_core.consumer.store.recording import LoopRecording
from tests.consumer.store.mirror import MirrorRecording


def listing(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(root.iterdir())}


def mutate(files: RecordedDir) -> None:
    data = files.open("data", create=True)
    data.write_at(b"a" * 5000, 0)
    data.write_at(b"b" * 100, 10)
    data.write(b"cc")
    data.truncate(3000)  # a shrink: recorded as a new Fnode holding the kept bytes
    data.truncate(4000)  # growth: recorded as zeros
    data.write_at(b"tail", 3990)
    big = files.open("big", create=True)
    big.write(os.urandom(FLUSH_BYTES * 2 + 17))
    big.truncate(0)
    big.write(b"restarted")
    big.close()
    files.link("data", "data.link")
    files.rename("big", "renamed")
    scratch = files.open("scratch", create=True, truncate=True)
    scratch.write(b"gone soon")
    scratch.close()
    files.remove("scratch")
    data.close()


async def test_mutations_from_a_worker_thread_rebuild_the_same_files(tmp_path: Path) -> None:
    mirror = MirrorRecording(tmp_path / "store", tmp_path / "mirror")
    files = RecordedDir(tmp_path / "store", LoopRecording(mirror, asyncio.get_running_loop()))
    await asyncio.to_thread(mutate, files)
    await files.fsync()
    mirror.close()
    assert listing(tmp_path / "mirror") == listing(tmp_path / "store")
    assert set(listing(tmp_path / "store")) == {"data", "data.link", "renamed"}
    assert (tmp_path / "mirror" / "data").stat().st_ino == (
        tmp_path / "mirror" / "data.link"
    ).stat().st_ino


async def test_fsync_is_a_barrier_after_the_pending_writes(tmp_path: Path) -> None:
    mirror = MirrorRecording(tmp_path / "store", tmp_path / "mirror")
    files = RecordedDir(tmp_path / "store", mirror)
    file = files.open("f", create=True)
    file.write(b"x" * 10)
    assert (tmp_path / "mirror" / "f").read_bytes() == b""  # coalesced, not yet recorded
    await file.fsync()
    assert (tmp_path / "mirror" / "f").read_bytes() == b"x" * 10
    file.close()
    mirror.close()


def test_paths_outside_the_directory_are_refused(tmp_path: Path) -> None:
    mirror = MirrorRecording(tmp_path / "store", tmp_path / "mirror")
    files = RecordedDir(tmp_path / "store", mirror)
    with pytest.raises(ValueError, match="outside the store directory"):
        files.open("../escape", create=True)
