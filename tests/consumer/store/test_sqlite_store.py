"""The recorded SQLite store: what it records rebuilds the database exactly.

The recording is mirrored into a second directory (a test double of the recorder), which
is then opened as a plain SQLite database.
"""

from __future__ import annotations

import asyncio
import random
import shutil
from pathlib import Path
from typing import Any

import apsw
import pytest

from gazette_core.consumer.store.interface import Checkpoint
from gazette_core.consumer.store.sqlite import SQLiteStore
from gazette_core.errors import ValidationError
from tests.consumer.store.mirror import MirrorRecording
from tests.consumer.store.sqlite_support import plain_contents, tables

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS kv (k INTEGER PRIMARY KEY, v BLOB, n INTEGER);"
    "CREATE INDEX IF NOT EXISTS kv_n ON kv(n);"
    "CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY AUTOINCREMENT, note TEXT);"
)


def checkpoint_at(offset: int) -> Checkpoint:
    checkpoint = Checkpoint()
    checkpoint.sources["examples/input"].read_through = offset
    return checkpoint


async def open_store(
    tmp: Path, journal_mode: str = "WAL"
) -> tuple[SQLiteStore, MirrorRecording]:
    mirror = MirrorRecording(tmp / "store", tmp / "mirror")
    store = await SQLiteStore.open(
        tmp / "store", mirror, bootstrap_sql=SCHEMA, journal_mode=journal_mode
    )
    return store, mirror


def files_of(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def random_txn(conn: apsw.Connection, rng: random.Random) -> None:
    for _ in range(rng.randint(1, 5)):
        key = rng.randrange(400)
        action = rng.random()
        if action < 0.5:
            blob = rng.randbytes(rng.choice((0, 10, 300, 3000, 9000)))
            conn.execute("INSERT OR REPLACE INTO kv VALUES (?, ?, ?)", (key, blob, key % 7))
        elif action < 0.75:
            conn.execute("UPDATE kv SET n = n + 1 WHERE k BETWEEN ? AND ?", (key, key + 20))
        elif action < 0.9:
            conn.execute("DELETE FROM kv WHERE k BETWEEN ? AND ?", (key, key + 10))
        else:
            conn.execute("INSERT INTO notes (note) VALUES (?)", ("n" * rng.randrange(200),))


@pytest.mark.parametrize("journal_mode", ["DELETE", "TRUNCATE", "WAL"])
async def test_random_transactions_mirror_is_an_identical_database(
    tmp_path: Path, journal_mode: str
) -> None:
    store, mirror = await open_store(tmp_path, journal_mode)
    rng = random.Random(11)
    for txn in range(1, 1501):
        await store.run(lambda conn: random_txn(conn, rng))
        await store.start_commit(checkpoint_at(txn), None)
        if txn == 700:
            await store.execute("DELETE FROM kv WHERE k < 300")
            await store.start_commit(checkpoint_at(txn), None)
            size = (tmp_path / "store" / "primary.db").stat().st_size
            await store.run(lambda conn: conn.execute("VACUUM"), in_transaction=False)
            await store.run(
                lambda conn: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall(),
                in_transaction=False,
            )
            assert (tmp_path / "store" / "primary.db").stat().st_size < size  # it shrank
            # Checkpointed, the database file alone is the state: the copy matches it.
            shrunk = (tmp_path / "store" / "primary.db").read_bytes()
            assert (tmp_path / "mirror" / "primary.db").read_bytes() == shrunk
    original = await store.run(tables, in_transaction=False)
    verdict, copied = plain_contents(tmp_path / "mirror")
    await store.close()
    mirror.close()
    assert verdict == "ok"
    assert copied == original
    # Closed, both directories hold the same files, byte for byte.
    assert files_of(tmp_path / "mirror") == files_of(tmp_path / "store")
    assert len(original["kv"]) > 100
    assert copied["gazette_checkpoint"] == [(0, checkpoint_at(1500).SerializeToString())]


async def test_checkpoint_round_trip_and_restore_from_the_rebuilt_directory(
    tmp_path: Path,
) -> None:
    store, mirror = await open_store(tmp_path)
    assert await store.restore_checkpoint() == Checkpoint()
    checkpoint = checkpoint_at(4096)
    producer = checkpoint.sources["examples/input"].producers.add()
    producer.id = b"\x01\x02\x03\x04\x05\x06"
    producer.state.last_ack = 2**63 + 5
    producer.state.begin = -1
    checkpoint.ack_intents["examples/output"] = b"ack-bytes"
    await store.execute("INSERT INTO kv VALUES (1, x'00', 1)")
    await store.start_commit(checkpoint, None)
    assert await store.restore_checkpoint() == checkpoint
    # Restoring left no transaction open: statements that need none still run.
    await store.run(lambda conn: conn.execute("VACUUM"), in_transaction=False)
    await store.close()
    mirror.close()

    rebuilt = MirrorRecording(tmp_path / "mirror", tmp_path / "mirror2")
    again = await SQLiteStore.open(tmp_path / "mirror", rebuilt, bootstrap_sql=SCHEMA)
    assert await again.restore_checkpoint() == checkpoint
    assert await again.execute("SELECT k FROM kv") == [(1,)]
    await again.destroy()
    rebuilt.close()
    assert not (tmp_path / "mirror").exists()


async def commit_rows(store: SQLiteStore, first: int, count: int, offset: int) -> None:
    def insert(conn: apsw.Connection) -> None:
        for k in range(first, first + count):
            conn.execute("INSERT INTO kv VALUES (?, ?, ?)", (k, bytes([k % 251]) * 1500, k))

    await store.run(insert)
    await store.start_commit(checkpoint_at(offset), None)


def changed_since(first: Path, later: Path) -> bool:
    """Whether the database or WAL file of `later` differs from that of `first`."""
    for name in ("primary.db", "primary.db-wal"):
        old, new = first / name, later / name
        if old.exists() != new.exists() or (new.exists() and old.read_bytes() != new.read_bytes()):
            return True
    return False


@pytest.mark.parametrize("journal_mode", ["DELETE", "WAL"])
async def test_a_crash_at_any_op_of_a_commit_recovers_a_committed_state(
    tmp_path: Path, journal_mode: str
) -> None:
    store, mirror = await open_store(tmp_path, journal_mode)
    await commit_rows(store, 0, 60, 1)
    before = await store.run(tables, in_transaction=False)
    # A tiny page cache makes the big transaction spill pages before it commits.
    await store.run(lambda c: c.execute("PRAGMA cache_size=2"), in_transaction=False)
    snapshots: list[Path] = []

    def snapshot(applied: int) -> None:
        target = tmp_path / "crash" / str(applied)
        shutil.copytree(tmp_path / "mirror", target)
        snapshots.append(target)

    mirror.on_applied = snapshot
    await commit_rows(store, 1000, 400, 2)
    mirror.on_applied = None
    after = await store.run(tables, in_transaction=False)
    await store.close()
    mirror.close()

    # Which snapshots hold uncommitted bytes in their files, before SQLite opens them.
    torn = [changed_since(snapshots[0], d) for d in snapshots]
    outcomes: list[str] = []
    for directory in snapshots:
        verdict, content = plain_contents(directory)
        assert verdict == "ok", directory
        assert content in (before, after), directory
        outcomes.append("before" if content == before else "after")
    assert len(snapshots) > 5
    assert outcomes[0] == "before" and outcomes[-1] == "after"
    # Committed once, and never uncommitted again.
    assert outcomes == sorted(outcomes, key=("before", "after").index)
    # Some crash points left uncommitted bytes that recovery had to discard.
    assert any(t and o == "before" for t, o in zip(torn, outcomes, strict=True)), (torn, outcomes)


@pytest.mark.parametrize("journal_mode", ["DELETE", "WAL"])
async def test_closing_mid_transaction_leaves_the_last_committed_state(
    tmp_path: Path, journal_mode: str
) -> None:
    store, mirror = await open_store(tmp_path, journal_mode)
    await commit_rows(store, 0, 40, 1)
    committed = await store.run(tables, in_transaction=False)
    await store.run(lambda c: c.execute("PRAGMA cache_size=2"), in_transaction=False)

    def uncommitted(conn: apsw.Connection) -> None:
        for k in range(500, 700):
            conn.execute("INSERT INTO kv VALUES (?, ?, ?)", (k, b"u" * 2000, k))
        conn.execute("DELETE FROM kv WHERE k < 20")

    await store.run(uncommitted)
    await store.close()
    await asyncio.sleep(0)  # lets the record calls posted by the rollback run
    mirror.close()
    verdict, content = plain_contents(tmp_path / "mirror")
    assert verdict == "ok"
    assert content == committed


async def test_commit_waits_for_wait_for_and_fails_with_it(tmp_path: Path) -> None:
    store, mirror = await open_store(tmp_path)
    await commit_rows(store, 0, 5, 1)
    loop = asyncio.get_running_loop()

    gate: asyncio.Future[None] = loop.create_future()
    await store.execute("INSERT INTO kv VALUES (100, x'01', 0)")
    commit = store.start_commit(checkpoint_at(2), gate)
    await store.run(lambda c: None, in_transaction=False)  # the local commit is done
    for _ in range(5):
        await asyncio.sleep(0)
    assert not commit.done()
    assert len(plain_contents(tmp_path / "mirror")[1]["kv"]) == 5
    gate.set_result(None)
    await commit
    assert len(plain_contents(tmp_path / "mirror")[1]["kv"]) == 6

    failing: asyncio.Future[Any] = loop.create_future()
    await store.execute("INSERT INTO kv VALUES (101, x'01', 0)")
    commit = store.start_commit(checkpoint_at(3), failing)
    failing.set_exception(RuntimeError("dependency append failed"))
    with pytest.raises(RuntimeError, match="dependency append failed"):
        await commit
    assert len(plain_contents(tmp_path / "mirror")[1]["kv"]) == 6
    await store.close()
    mirror.close()


@pytest.mark.parametrize(
    ("journal_mode", "log_file", "restart"),
    [
        ("WAL", "primary.db-wal", "PRAGMA wal_checkpoint(RESTART)"),
        ("PERSIST", "primary.db-journal", "SELECT 1"),
    ],
)
async def test_a_restarted_log_file_drops_its_old_content_from_the_recording(
    tmp_path: Path, journal_mode: str, log_file: str, restart: str
) -> None:
    store, mirror = await open_store(tmp_path, journal_mode)
    await commit_rows(store, 0, 200, 1)
    await store.run(lambda c: c.execute(restart).fetchall(), in_transaction=False)
    await commit_rows(store, 1000, 1, 2)
    original = await store.run(tables, in_transaction=False)
    local_size = (tmp_path / "store" / log_file).stat().st_size
    recorded_size = (tmp_path / "mirror" / log_file).stat().st_size
    await store.close()
    mirror.close()
    # The local file keeps stale bytes past the new generation; the recording does not.
    assert recorded_size < local_size // 4
    verdict, copied = plain_contents(tmp_path / "mirror")
    assert verdict == "ok"
    assert copied == original


async def test_a_store_directory_reached_through_a_symlink_is_recorded(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "via").symlink_to(tmp_path / "real")
    mirror = MirrorRecording(tmp_path / "via" / "store", tmp_path / "mirror")
    store = await SQLiteStore.open(tmp_path / "via" / "store", mirror, bootstrap_sql=SCHEMA)
    await commit_rows(store, 0, 10, 1)
    original = await store.run(tables, in_transaction=False)
    await store.close()
    mirror.close()
    assert plain_contents(tmp_path / "mirror") == ("ok", original)


async def test_a_journal_mode_that_is_not_durable_is_refused(tmp_path: Path) -> None:
    mirror = MirrorRecording(tmp_path / "store", tmp_path / "mirror")
    with pytest.raises(ValidationError, match="journal_mode: 'MEMORY' is not one of"):
        await SQLiteStore.open(tmp_path / "store", mirror, journal_mode="MEMORY")
