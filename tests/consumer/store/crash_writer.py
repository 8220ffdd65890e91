"""A process committing single-row SQLite transactions through a Recorder until killed.

Usage: python -m tests.consumer.store.crash_writer ENDPOINT LOG DIRECTORY HINTS
Prints each key once its commit resolved, so the test knows what is durable, and
every 10 commits replaces the file HINTS with the recorder's hints (as JSON), as a
consumer keeps them in Etcd for whoever recovers the store.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from gazette_core.consumer.recoverylog.author import new_author
from gazette_core.consumer.recoverylog.fsm import FSM
from gazette_core.consumer.recoverylog.hints import encode_hints
from gazette_core.consumer.recoverylog.recorder import Recorder
from gazette_core.consumer.store.sqlite import SQLiteStore
from gazette_core.testing.broker import journal_stub
from tests.consumer.store.test_sqlite_store import checkpoint_at

SCHEMA = "CREATE TABLE IF NOT EXISTS rows (k INTEGER PRIMARY KEY, v BLOB)"


def save_hints(path: Path, data: bytes) -> None:
    staged = path.with_suffix(".next")
    staged.write_bytes(data)
    staged.replace(path)


async def main(endpoint: str, log: str, directory: Path, hints: Path) -> None:
    async with journal_stub(endpoint) as stub:
        rec = await Recorder.start(log, FSM(), new_author(), str(directory), stub)
        store = await SQLiteStore.open(directory, rec, bootstrap_sql=SCHEMA)
        for key in range(1, 1_000_000):
            # Rows of several pages, so a commit spans many recorded writes.
            await store.execute("INSERT INTO rows VALUES (?, ?)", (key, bytes([key % 251]) * 9000))
            await store.start_commit(checkpoint_at(key), None)
            if key % 10 == 0:
                save_hints(hints, encode_hints(await rec.build_hints()))
            print(key, flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])))
