"""What SQLite store compaction saves at recovery: playback from hints before and after.

A small table (CHURN_ROWS rows) takes CHURN_TXNS updating commits, so the log grows far
past the database. Hints built then are played back (the database file's whole history),
then the store compacts and the new hints are played back (about the database's size).
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

from bench.playback import timed_play
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.consumer.recoverylog.author import new_author
from gazette_core.consumer.recoverylog.fsm import FSM
from gazette_core.consumer.recoverylog.recorder import Recorder
from gazette_core.consumer.store.interface import Checkpoint
from gazette_core.consumer.store.sqlite import SQLiteStore
from gazette_core.consumer.store.sqlite_compaction import CompactionPolicy

COMPACT_LOG = "bench/recovery/compaction"
CHURN_TXNS = int(os.environ.get("BENCH_COMPACTION_TXNS", "3000"))
CHURN_ROWS = 500
SCHEMA = "CREATE TABLE IF NOT EXISTS c (k INTEGER PRIMARY KEY, n INTEGER, pad BLOB)"


async def _play(stub: pb_grpc.JournalStub, hints: rpb.FSMHints, directory: Path
                ) -> tuple[float, int]:
    """Seconds to play `hints` to the write head, and the log bytes read."""
    elapsed, progress = await timed_play(stub, hints, directory)
    return elapsed, progress.bytes_read


async def measure(stub: pb_grpc.JournalStub, tmp: Path) -> dict[str, float]:
    """`COMPACT_LOG` must exist. Figures before and after one `compact()`."""
    directory = tmp / "compacted-store"
    rec = await Recorder.start(COMPACT_LOG, FSM(), new_author(), str(directory), stub)
    store = await SQLiteStore.open(directory, rec, bootstrap_sql=SCHEMA,
                                   compaction=CompactionPolicy(ratio=None))
    rng = random.Random(1)
    for txn in range(CHURN_TXNS):
        for _ in range(4):
            await store.execute(
                "INSERT INTO c VALUES (?, 1, ?) ON CONFLICT(k) DO UPDATE SET n = n + 1",
                (rng.randrange(CHURN_ROWS), rng.randbytes(200)))
        checkpoint = Checkpoint()
        checkpoint.sources["bench/input"].read_through = txn
        await store.start_commit(checkpoint, None)
    out: dict[str, float] = {}
    out["sqlite_hints_s"], before = await _play(stub, await rec.build_hints(), tmp / "p1")
    start = time.perf_counter()
    await store.compact()
    out["sqlite_compact_s"] = time.perf_counter() - start
    out["sqlite_db_mb"] = os.path.getsize(directory / "primary.db") / 1e6
    out["sqlite_compacted_hints_s"], after = await _play(
        stub, await rec.build_hints(), tmp / "p2")
    out["sqlite_hints_read_mb"], out["sqlite_compacted_hints_read_mb"] = before / 1e6, after / 1e6
    out["sqlite_compacted_hints_ratio"] = out["sqlite_compacted_hints_s"] / out["sqlite_hints_s"]
    await store.close()
    await rec.stop()
    return out
