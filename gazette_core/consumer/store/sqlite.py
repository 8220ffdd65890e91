"""A SQLite store (apsw) whose files are recorded, with its checkpoint in the same database.

All SQLite work runs on one worker thread; record calls reach the recording through
`LoopRecording`. A consumer transaction is one SQL transaction, begun lazily by `run`;
`start_commit` writes the checkpoint into table `gazette_checkpoint` and commits, so state
and read offsets commit together, then returns a barrier that resolves once every write of
the commit is in the recovery log.

`compact` (and, after a commit, the store's `CompactionPolicy`) rewrites the database into
a new file so that recovery stops replaying the old file's history; see
`sqlite_compaction`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import apsw

from gazette_core.consumer.store.interface import Checkpoint, Store
from gazette_core.consumer.store.recording import LoopRecording, Recording
from gazette_core.consumer.store.sqlite_compaction import (
    CompactionPolicy,
    install_compacted,
    recover_interrupted,
    write_compacted,
)
from gazette_core.consumer.store.sqlite_vfs import RecordedVFS, retrieve, unregister
from gazette_core.errors import ValidationError

T = TypeVar("T")
log = logging.getLogger(__name__)

DB_NAME = "primary.db"
JOURNAL_MODES = ("WAL", "DELETE", "TRUNCATE", "PERSIST")
_CHECKPOINT_DDL = (
    "CREATE TABLE IF NOT EXISTS gazette_checkpoint ("
    "rowid INTEGER PRIMARY KEY DEFAULT 0 CHECK (rowid = 0), checkpoint BLOB);"
    "INSERT OR IGNORE INTO gazette_checkpoint (rowid, checkpoint) VALUES (0, x'');"
)


class SQLiteStore(Store):
    """Open with `await SQLiteStore.open(directory, recording)`; use with `run`/`execute`."""

    def __init__(
        self,
        directory: Path,
        recording: LoopRecording,
        vfs: RecordedVFS,
        journal_mode: str = "WAL",
        compaction: CompactionPolicy | None = None,
    ) -> None:
        self.directory = directory
        self.db_path = str(directory / DB_NAME)
        self.journal_mode = journal_mode
        self.compaction = compaction or CompactionPolicy()
        self.compactions = 0
        self._recording = recording
        self._vfs = vfs
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-store")
        self._conn: apsw.Connection | None = None
        self._in_txn = False

    @classmethod
    async def open(
        cls,
        directory: str | Path,
        recording: Recording,
        *,
        bootstrap_sql: str = "",
        journal_mode: str = "WAL",
        compaction: CompactionPolicy | None = None,
    ) -> SQLiteStore:
        """Open (or create) `directory/primary.db`, e.g. in a directory a player rebuilt.

        `journal_mode` is WAL (the default: one recorded append stream per commit) or a
        rollback-journal mode, DELETE, TRUNCATE or PERSIST; the others are not durable.
        `compaction` says when commits compact the database (default `CompactionPolicy()`).
        """
        if journal_mode.upper() not in JOURNAL_MODES:
            raise ValidationError(
                "journal_mode", f"{journal_mode!r} is not one of {', '.join(JOURNAL_MODES)}"
            )
        loop = asyncio.get_running_loop()
        root = Path(directory).absolute()
        root.mkdir(parents=True, exist_ok=True)
        threaded = LoopRecording(recording, loop)
        vfs = RecordedVFS(f"store-{time.time_ns()}", str(root), threaded)
        store = cls(root, threaded, vfs, journal_mode, compaction)
        await store._call(recover_interrupted, store.db_path, threaded)
        await store._call(store._open_sync, bootstrap_sql, journal_mode)
        return store

    def _open_sync(self, bootstrap_sql: str, journal_mode: str) -> None:
        flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
        conn = apsw.Connection(self.db_path, flags=flags, vfs=self._vfs.vfs_name)
        self._conn = conn
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA secure_delete=FAST")
        if journal_mode.upper() == "WAL":
            # One connection only, so no shared-memory index is needed (nor recorded).
            conn.execute("PRAGMA locking_mode=EXCLUSIVE")
        conn.execute(f"PRAGMA journal_mode={journal_mode}")
        with conn:
            if bootstrap_sql:
                conn.execute(bootstrap_sql)
            conn.execute(_CHECKPOINT_DDL)

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._worker, fn, *args)

    def _connection(self) -> apsw.Connection:
        if self._conn is None:
            raise RuntimeError("the SQLite store is closed")
        return self._conn

    def _txn_sync(self) -> apsw.Connection:
        conn = self._connection()
        if not self._in_txn:
            conn.execute("BEGIN")
            self._in_txn = True
        return conn

    async def run(self, fn: Callable[[apsw.Connection], T], *, in_transaction: bool = True) -> T:
        """Run `fn` on the worker thread inside the current transaction (begun if needed).

        With `in_transaction=False` it runs outside any transaction (VACUUM, PRAGMAs), which
        requires that none is open.
        """
        if in_transaction:
            return await self._call(lambda: fn(self._txn_sync()))
        return await self._call(lambda: fn(self._no_txn_sync()))

    def _no_txn_sync(self) -> apsw.Connection:
        if self._in_txn:
            raise RuntimeError("a transaction is open; commit it first")
        return self._connection()

    async def execute(self, sql: str, bindings: Any = None) -> list[Any]:
        """Execute `sql` in the current transaction and return all its rows."""
        return await self.run(lambda conn: list(conn.execute(sql, bindings)))

    async def restore_checkpoint(self) -> Checkpoint:
        def read(conn: apsw.Connection) -> bytes:
            row = conn.execute("SELECT checkpoint FROM gazette_checkpoint").fetchone()
            return bytes(row[0]) if row and row[0] else b""

        # Read without beginning a transaction (inside one if the caller has one open).
        checkpoint = Checkpoint()
        checkpoint.ParseFromString(await self._call(lambda: read(self._connection())))
        return checkpoint

    def start_commit(
        self, checkpoint: Checkpoint, wait_for: Awaitable[None] | None
    ) -> asyncio.Future[None]:
        # Posted before the worker's record calls, so they queue behind `wait_for`. With
        # nothing to wait for it would only cost the commit an append round trip.
        first = self._recording.barrier(wait_for) if wait_for is not None else None
        # Submitted now, not when a coroutine first runs, so it precedes later `run` calls.
        work = asyncio.get_running_loop().run_in_executor(
            self._worker, self._commit_sync, checkpoint.SerializeToString()
        )
        return asyncio.ensure_future(_finish_commit(first, work))

    def _commit_sync(self, blob: bytes) -> asyncio.Future[None]:
        conn = self._txn_sync()
        try:
            conn.execute("UPDATE gazette_checkpoint SET checkpoint = ?", (blob,))
            conn.execute("COMMIT")
        finally:
            self._in_txn = conn.in_transaction
        committed = self._recording.barrier(None)
        if self.compaction.due(self._vfs.written.get(self.db_path, 0), self._db_size()):
            # Recorded after the commit, so the commit's barrier does not wait for it.
            self._auto_compact(committed)
        return committed

    def _auto_compact(self, committed: asyncio.Future[None]) -> None:
        """Compact; a failure leaves the commit standing unless the database is lost."""
        try:
            self._compact_sync()
        except (apsw.Error, OSError) as err:
            if self._conn is None:
                committed.add_done_callback(retrieve)
                raise
            # Tried again only once as much history has accumulated again.
            self._vfs.written.clear()
            log.warning("compaction of %s failed, the store goes on: %s", self.db_path, err)

    async def compact(self) -> None:
        """Rewrite the database into a new file renamed over it; returns once recorded.

        No transaction may be open. Afterwards hints cover only the new file's writes.
        """
        await self._call(self._compact_sync)
        await self._recording.barrier(None)

    def _compact_sync(self) -> None:
        target = write_compacted(self._no_txn_sync(), self.db_path, self._recording)
        self._close_sync()
        try:
            install_compacted(target, self.db_path, self._recording)
        finally:
            # Reopened on the old file if the rename failed: the store stays usable.
            self._open_sync("", self.journal_mode)
        self._vfs.written.clear()
        self.compactions += 1

    def _db_size(self) -> int:
        try:
            return os.path.getsize(self.db_path)
        except FileNotFoundError:
            return 0

    async def close(self) -> None:
        """Close the database (an open transaction rolls back) and the worker, keeping files."""
        if self._conn is not None:
            await self._call(self._close_sync)
        self._worker.shutdown(wait=True)
        unregister(self._vfs)

    def _close_sync(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    async def destroy(self) -> None:
        await self.close()
        await asyncio.to_thread(shutil.rmtree, self.directory, True)


async def _finish_commit(
    first: Awaitable[None] | None, work: Awaitable[asyncio.Future[None]]
) -> None:
    """Fail with `wait_for`'s error first, then the local commit's, then the log's."""
    if first is None:
        await (await work)
        return
    outcome = await asyncio.gather(first, work, return_exceptions=True)
    waited, final = outcome
    if isinstance(final, BaseException):
        raise final
    if isinstance(waited, BaseException):
        final.add_done_callback(retrieve)
        raise waited
    await final
