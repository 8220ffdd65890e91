"""SQLite store compaction: recovery from hints reads the live database, not its history.

A small table updated many times grows the log far beyond the database; after
compaction the hints start at the rewritten file, and every prefix of the compaction's
appends plays back into the old or the new database, never a torn one.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.service import Broker
from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.consumer.recoverylog.author import new_author
from gazette_core.consumer.recoverylog.framing import HEADER_LEN, body_length
from gazette_core.consumer.recoverylog.fsm import FSM
from gazette_core.consumer.recoverylog.player import Player
from gazette_core.consumer.recoverylog.recorder import Recorder
from gazette_core.consumer.store.sqlite import SQLiteStore
from gazette_core.consumer.store.sqlite_compaction import CompactionPolicy
from gazette_core.testing.broker import journal_spec
from tests.broker.conftest import broker, stub  # noqa: F401  (fixtures)
from tests.broker.support import append, content, create
from tests.consumer.store.mirror import MirrorRecording
from tests.consumer.store.sqlite_support import plain_contents
from tests.consumer.store.test_recorded_e2e import _Unrecorded
from tests.consumer.store.test_sqlite_store import checkpoint_at

LOG = "recovery/logs/compact"
SCHEMA = "CREATE TABLE IF NOT EXISTS counters (k INTEGER PRIMARY KEY, n INTEGER, pad BLOB);"
OFF = CompactionPolicy(ratio=None)


async def churn(store: SQLiteStore, rng: random.Random, first: int, count: int) -> None:
    """`count` commits, each updating a few rows of a small table."""
    for txn in range(first, first + count):
        for _ in range(3):
            k = rng.randrange(200)
            await store.execute(
                "INSERT INTO counters VALUES (?, 1, ?) ON CONFLICT(k) DO UPDATE SET n = n + 1",
                (k, rng.randbytes(200)))
        await store.start_commit(checkpoint_at(txn), None)


async def open_recorded(client: pb_grpc.JournalStub, directory: Path,
                        policy: CompactionPolicy, journal_mode: str = "WAL",
                        ) -> tuple[Recorder, SQLiteStore]:
    rec = await Recorder.start(LOG, FSM(), new_author(), str(directory), client)
    store = await SQLiteStore.open(directory, rec, bootstrap_sql=SCHEMA,
                                   journal_mode=journal_mode, compaction=policy)
    return rec, store


async def play(client: pb_grpc.JournalStub, log: str, directory: Path,
               hints: rpb.FSMHints | None = None) -> Player:
    player = Player()
    player.finish_at_write_head()
    await player.play(hints or rpb.FSMHints(log=log), str(directory), client)
    return player


async def test_compacted_store_recovers_from_hints_reading_about_its_size(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path) -> None:  # noqa: F811
    await create(stub, journal_spec(LOG, length=64 << 20))
    rec, store = await open_recorded(stub, tmp_path / "store", OFF)
    await churn(store, random.Random(7), 1, 1500)
    await store.compact()
    hints = await rec.build_hints()
    db_size = (tmp_path / "store" / "primary.db").stat().st_size
    original = plain_contents(tmp_path / "store")
    head = len(await content(stub, LOG))
    assert head > 20 * db_size  # The log is long; the database small.

    player = await play(stub, LOG, tmp_path / "rebuilt", hints)
    assert player.progress.bytes_read <= 4 * db_size
    assert plain_contents(tmp_path / "rebuilt") == original
    assert original[0] == "ok" and len(original[1]["counters"]) > 100
    await store.close()
    await rec.stop()
    reopened = await SQLiteStore.open(tmp_path / "rebuilt", _Unrecorded(), compaction=OFF)
    assert await reopened.restore_checkpoint() == checkpoint_at(1500)
    await reopened.close()


# In WAL mode the database file is written only at WAL checkpoints, hence more commits.
@pytest.mark.parametrize(("journal_mode", "commits"), [("DELETE", 600), ("WAL", 1500)])
async def test_commits_compact_automatically_past_the_policy_ratio(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path,  # noqa: F811
        journal_mode: str, commits: int) -> None:
    await create(stub, journal_spec(LOG, length=64 << 20))
    rec = await Recorder.start(LOG, FSM(), new_author(), str(tmp_path / "store"), stub)
    store = await SQLiteStore.open(tmp_path / "store", rec, bootstrap_sql=SCHEMA,
                                   journal_mode=journal_mode,
                                   compaction=CompactionPolicy(ratio=4, floor=0))
    rng = random.Random(9)
    await churn(store, rng, 1, commits)
    assert store.compactions >= 1
    await churn(store, rng, commits + 1, 20)
    hints = await rec.build_hints()
    db_size = (tmp_path / "store" / "primary.db").stat().st_size
    wal = tmp_path / "store" / "primary.db-wal"
    wal_size = wal.stat().st_size if wal.exists() else 0
    original = plain_contents(tmp_path / "store")

    player = await play(stub, LOG, tmp_path / "rebuilt", hints)
    # The policy bounds the database file's recorded history to about K x its size;
    # a WAL adds its own frames since its last restart (at most the local file).
    assert player.progress.bytes_read <= 8 * db_size + wal_size
    assert plain_contents(tmp_path / "rebuilt") == original
    await store.close()
    await rec.stop()


def frame_ends(log: bytes, start: int) -> list[int]:
    """Offsets just past each frame (and its write payload) from `start` to the end."""
    ends, at = [], start
    while at < len(log):
        body = log[at + HEADER_LEN: at + HEADER_LEN + body_length(log[at: at + HEADER_LEN])]
        op = rpb.RecordedOp.FromString(body)
        at += HEADER_LEN + len(body) + (op.write.length if op.HasField("write") else 0)
        ends.append(at)
    return ends


@pytest.mark.parametrize("journal_mode", ["WAL", "DELETE", "PERSIST"])
async def test_every_prefix_of_a_compaction_plays_back_a_whole_database(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path,  # noqa: F811
        journal_mode: str) -> None:
    await create(stub, journal_spec(LOG, length=64 << 20))
    rec, store = await open_recorded(stub, tmp_path / "store", OFF, journal_mode)
    await churn(store, random.Random(3), 1, 100)
    before = len(await content(stub, LOG))
    expected = plain_contents(tmp_path / "store")
    old_db = (tmp_path / "store" / "primary.db").read_bytes()
    await store.compact()
    new_db = (tmp_path / "store" / "primary.db").read_bytes()
    await store.close()
    await rec.stop()
    log = await content(stub, LOG)
    cuts = frame_ends(log, before)
    assert len(cuts) >= 5

    seen = set()
    for n, cut in enumerate([before, *cuts]):
        name = f"{LOG}-cut-{n}"
        await create(stub, journal_spec(name, length=64 << 20))
        await append(stub, name, *(log[at: min(at + (1 << 20), cut)]
                                   for at in range(0, cut, 1 << 20)))
        rebuilt = tmp_path / f"cut-{n}"
        await play(stub, name, rebuilt)
        # Opening the store finishes (or drops) a compaction the cut interrupted.
        opened = await SQLiteStore.open(rebuilt, _Unrecorded(), journal_mode=journal_mode,
                                        compaction=OFF)
        await opened.close()
        assert plain_contents(rebuilt) == expected, f"cut at {cut}"
        db = (rebuilt / "primary.db").read_bytes()
        seen.add("new" if db == new_db else "old")
        if db == new_db:
            assert not (rebuilt / "primary.db-wal").exists()
    assert seen == {"old", "new"}
    assert old_db != new_db


async def test_a_failed_automatic_compaction_leaves_commits_standing(tmp_path: Path) -> None:
    mirror = MirrorRecording(tmp_path / "store", tmp_path / "mirror")
    store = await SQLiteStore.open(tmp_path / "store", mirror, bootstrap_sql=SCHEMA,
                                   journal_mode="DELETE",
                                   compaction=CompactionPolicy(ratio=1, floor=0))
    # A directory where the compaction's new file goes makes every attempt fail.
    (tmp_path / "store" / "primary.db-compact").mkdir()
    await churn(store, random.Random(5), 1, 300)
    assert store.compactions == 0
    assert await store.restore_checkpoint() == checkpoint_at(300)
    (tmp_path / "store" / "primary.db-compact").rmdir()
    await churn(store, random.Random(6), 301, 300)
    assert store.compactions >= 1
    expected = plain_contents(tmp_path / "store")
    await store.close()
    assert plain_contents(tmp_path / "mirror") == expected
