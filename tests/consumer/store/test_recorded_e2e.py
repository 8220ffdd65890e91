"""Recorded stores end to end: a store records through the Recorder to a real broker's
journal, and the Player rebuilds its directory from offset 0 and from hints."""

from __future__ import annotations

import asyncio
import random
import sys
from pathlib import Path
from typing import Any

import pytest

from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.service import Broker
from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.consumer.recoverylog.author import new_author
from gazette_core.consumer.recoverylog.fsm import FSM
from gazette_core.consumer.recoverylog.hints import decode_hints
from gazette_core.consumer.recoverylog.player import Player, Resolved
from gazette_core.consumer.recoverylog.recorder import Recorder, RecorderError
from gazette_core.consumer.store.json_file import JSONFileStore
from gazette_core.consumer.store.recording import RecordingBrokenError
from gazette_core.consumer.store.sqlite import SQLiteStore
from gazette_core.testing.broker import journal_spec
from tests.broker.conftest import broker, stub  # noqa: F401  (fixtures)
from tests.broker.support import create
from tests.consumer.store.sqlite_support import plain_contents
from tests.consumer.store.test_json_store import random_counts
from tests.consumer.store.test_sqlite_store import SCHEMA, checkpoint_at, files_of, random_txn

LOG = "recovery/logs/e2e"


async def play(client: pb_grpc.JournalStub, directory: Path,
               hints: rpb.FSMHints | None = None, handoff: int | None = None) -> Resolved:
    """Play LOG into `directory`, stopping at the write head (or handing off there)."""
    player = Player()
    if handoff is None:
        player.finish_at_write_head()
    else:
        player.inject_handoff(handoff)
    return await player.play(hints or rpb.FSMHints(log=LOG), str(directory), client)


async def sqlite_txns(store: SQLiteStore, rng: random.Random, first: int, count: int) -> None:
    for txn in range(first, first + count):
        await store.run(lambda conn: random_txn(conn, rng))
        await store.start_commit(checkpoint_at(txn), None)


async def test_sqlite_store_rebuilt_from_offset_zero_and_from_hints(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path) -> None:  # noqa: F811
    await create(stub, journal_spec(LOG, length=16 << 20))
    rec = await Recorder.start(LOG, FSM(), new_author(), str(tmp_path / "store"), stub)
    store = await SQLiteStore.open(tmp_path / "store", rec, bootstrap_sql=SCHEMA)
    rng = random.Random(23)
    await sqlite_txns(store, rng, 1, 1000)
    await store.execute("DELETE FROM kv WHERE k < 300")
    await store.start_commit(checkpoint_at(1000), None)
    await store.run(lambda conn: conn.execute("VACUUM"), in_transaction=False)
    await sqlite_txns(store, rng, 1001, 1000)
    hints = await rec.build_hints()
    original = plain_contents(tmp_path / "store")
    assert original[0] == "ok" and len(original[1]["kv"]) > 100

    from_zero = await play(stub, tmp_path / "from-zero")
    from_hints = await play(stub, tmp_path / "from-hints", hints)
    assert plain_contents(tmp_path / "from-zero") == original
    assert plain_contents(tmp_path / "from-hints") == original
    # Byte for byte: the database file, and the WAL up to where its last restart wrote
    # (the recording drops a restarted WAL's stale tail, which SQLite never reads).
    local = files_of(tmp_path / "store")
    for directory in ("from-zero", "from-hints"):
        rebuilt = files_of(tmp_path / directory)
        assert rebuilt["primary.db"] == local["primary.db"]
        assert local["primary.db-wal"].startswith(rebuilt["primary.db-wal"])
    for resolved in (from_zero, from_hints):
        assert resolved.fsm.links == rec.fsm.links
        assert (resolved.fsm.next_seq_no, resolved.fsm.next_checksum) == (
            rec.fsm.next_seq_no, rec.fsm.next_checksum)

    # The rebuilt directory is a working store with the committed checkpoint.
    await store.close()
    await rec.stop()
    reopened = await SQLiteStore.open(tmp_path / "from-hints", _Unrecorded())
    assert await reopened.restore_checkpoint() == checkpoint_at(2000)
    await reopened.close()


async def test_json_store_rebuilt_from_offset_zero_and_from_hints(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path) -> None:  # noqa: F811
    await create(stub, journal_spec(LOG))
    rec = await Recorder.start(LOG, FSM(), new_author(), str(tmp_path / "store"), stub)
    store = await JSONFileStore.open(tmp_path / "store", rec, initial_state={})
    rng = random.Random(5)
    for txn in range(1, 1001):
        random_counts(store.state, rng)
        await store.start_commit(checkpoint_at(txn), None)
    hints = await rec.build_hints()
    # Each commit replaces state.json, so only the last commit's file is live.
    assert len(hints.live_nodes) == 1

    for directory, start in (("from-zero", None), ("from-hints", hints)):
        await play(stub, tmp_path / directory, start)
        assert sorted(p.name for p in (tmp_path / directory).iterdir()) == ["state.json"]
        assert (tmp_path / directory / "state.json").read_bytes() == (
            tmp_path / "store" / "state.json").read_bytes()
        rebuilt = await JSONFileStore.open(tmp_path / directory, _Unrecorded())
        assert rebuilt.state == store.state
        assert await rebuilt.restore_checkpoint() == checkpoint_at(1000)
    await rec.stop()


async def test_handoff_fences_a_store_still_committing(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path) -> None:  # noqa: F811
    await create(stub, journal_spec(LOG, length=16 << 20))
    zombie_rec = await Recorder.start(LOG, FSM(), new_author(), str(tmp_path / "zombie"), stub)
    zombie = await SQLiteStore.open(tmp_path / "zombie", zombie_rec, bootstrap_sql=SCHEMA)
    await sqlite_txns(zombie, random.Random(3), 1, 50)

    some_committed = asyncio.Event()

    async def keep_committing() -> int:
        """Commit single-row inserts until the recorder is fenced; the failed key."""
        for key in range(1_000_000, 2_000_000):
            if key == 1_000_010:
                some_committed.set()
            await zombie.execute("INSERT INTO notes (id, note) VALUES (?, 'zombie')", (key,))
            try:
                await zombie.start_commit(checkpoint_at(key), None)
            except (RecorderError, RecordingBrokenError) as err:
                assert "fenced" in str(err)
                return key
        raise AssertionError("never fenced")

    committing = asyncio.create_task(keep_committing())
    other = new_author()
    async with asyncio.timeout(30):
        await some_committed.wait()  # The hand-off then races the zombie's appends.
        claimed = await play(stub, tmp_path / "primary", handoff=other)
        failed_key = await committing
    # The new primary starts from a whole commit of the zombie: every commit that
    # succeeded, and the fenced one only if all of it reached the log before the hand-off
    # (its outcome was unknown; state and checkpoint still agree).
    claimed_rows = plain_contents(tmp_path / "primary")[1]
    last = zombie_keys(claimed_rows)[-1]
    assert zombie_keys(claimed_rows) == list(range(1_000_000, last + 1))
    assert last in (failed_key - 1, failed_key)
    assert claimed_rows["gazette_checkpoint"] == [(0, checkpoint_at(last).SerializeToString())]

    rec = await Recorder.start(LOG, claimed.fsm, other, str(tmp_path / "primary"), stub)
    primary = await SQLiteStore.open(tmp_path / "primary", rec)
    await primary.execute("INSERT INTO notes (note) VALUES ('primary')")
    await primary.start_commit(checkpoint_at(7), None)
    # The zombie keeps failing; its local-only commits never reach the log.
    await zombie.execute("INSERT INTO notes (note) VALUES ('zombie again')")
    with pytest.raises((RecorderError, RecordingBrokenError)):
        await zombie.start_commit(checkpoint_at(8), None)
    expected = plain_contents(tmp_path / "primary")

    await play(stub, tmp_path / "replayed")
    verdict, rows = plain_contents(tmp_path / "replayed")
    assert (verdict, rows) == expected and verdict == "ok"
    notes = {r[1] for r in rows["notes"]}
    assert "primary" in notes and "zombie again" not in notes
    assert zombie_keys(rows) == zombie_keys(claimed_rows)
    assert rows["gazette_checkpoint"] == [(0, checkpoint_at(7).SerializeToString())]
    await primary.close()
    await rec.stop()
    await zombie.close()
    await zombie_rec.stop()


def zombie_keys(rows: dict[str, list[tuple[Any, ...]]]) -> list[int]:
    return [r[0] for r in rows["notes"] if r[1] == "zombie"]


class _Unrecorded:
    """A Recording that records nothing, for opening a rebuilt directory read-only."""

    def open_file(self, path: str, *, create: bool, truncate: bool) -> _Unrecorded:
        return self

    def write_at(self, data: bytes, offset: int) -> None:
        pass

    def remove(self, path: str) -> None:
        pass

    def link(self, src: str, dst: str) -> None:
        pass

    def rename(self, src: str, dst: str) -> None:
        pass

    async def barrier(self, wait_for: Any = None) -> None:
        if wait_for is not None:
            await wait_for



async def test_recorder_killed_mid_commit_plays_back_a_committed_state(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path) -> None:  # noqa: F811
    await create(stub, journal_spec(LOG, length=16 << 20))
    hints_file = tmp_path / "hints.json"
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.consumer.store.crash_writer", broker.endpoint, LOG,
        str(tmp_path / "store"), str(hints_file), stdout=asyncio.subprocess.PIPE)
    assert child.stdout is not None
    durable = 0
    try:
        async with asyncio.timeout(60):
            while durable < 40:
                durable = int(await child.stdout.readline())
    finally:
        child.kill()  # Mid-commit, most likely: it commits back to back.
        await child.wait()

    # From offset 0, and from the hints the killed process last saved, as a
    # process taking over after losing the store's disk would.
    hints = decode_hints(hints_file.read_bytes())
    for rebuilt, from_hints in ((tmp_path / "from-zero", None), (tmp_path / "from-hints", hints)):
        await play(stub, rebuilt, from_hints)
        verdict, rows = plain_contents(rebuilt)
        assert verdict == "ok"
        keys = [r[0] for r in rows["rows"]]
        last = keys[-1]
        # Every acknowledged commit, perhaps ones whose acknowledgement the kill cut off,
        # and never part of one: rows and checkpoint agree.
        assert keys == list(range(1, last + 1)) and last >= durable
        assert all(r[1] == bytes([r[0] % 251]) * 9000 for r in rows["rows"])
        assert rows["gazette_checkpoint"] == [(0, checkpoint_at(last).SerializeToString())]
