"""Recovery-log figures: SQLite commits through the recorded store, and log playback.

Each figure comes with a ceiling measured in the same run: a plain SQLite database with
`synchronous=FULL` on local disk doing the same transactions, and reading the played log
raw with the client. `playback_from_hints_s` plays a log of DEAD_MB dead data then
LIVE_MB live data from the recorder's hints, against playing it from offset 0; the
`sqlite_*hints*` figures (sqlite_compaction_bench) show what store compaction saves.
Run alone with `python -m bench.recoverylog_bench` (on its own local stack).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
import time
from collections.abc import Awaitable
from pathlib import Path

import apsw

from bench import broker_bench, sqlite_compaction_bench
from bench.playback import timed_play
from gazette_core.broker.client.appender import append_retrying
from gazette_core.broker.client.journals import apply_journals
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.consumer.recoverylog.author import new_author
from gazette_core.consumer.recoverylog.fsm import FSM
from gazette_core.consumer.recoverylog.recorder import Recorder
from gazette_core.consumer.store.interface import Checkpoint
from gazette_core.consumer.store.sqlite import SQLiteStore
from gazette_core.testing.broker import journal_spec, journal_stub

MiB = 1 << 20
TXNS = int(os.environ.get("BENCH_SQLITE_TXNS", "2000"))
# The sizes: a 200 MB log to play, and 500 MB of which 10 MB are live.
PLAYBACK_MB = int(os.environ.get("BENCH_PLAYBACK_MB", "200"))
DEAD_MB = int(os.environ.get("BENCH_DEAD_MB", "490"))
SCHEMA = "CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY, v BLOB)"
LIVE_MB = int(os.environ.get("BENCH_LIVE_MB", "10"))
SQLITE_LOG, PLAYBACK_LOG = "bench/recovery/sqlite", "bench/recovery/playback"
HINTS_LOG = "bench/recovery/hints"


def _checkpoint(offset: int) -> Checkpoint:
    checkpoint = Checkpoint()
    checkpoint.sources["bench/input"].read_through = offset
    return checkpoint


async def recorded_sqlite_txn_per_s(stub: pb_grpc.JournalStub, directory: Path) -> float:
    """Single-row transactions per second, each committed with its checkpoint."""
    rec = await Recorder.start(SQLITE_LOG, FSM(), new_author(), str(directory), stub)
    store = await SQLiteStore.open(directory, rec, bootstrap_sql=SCHEMA)
    row = os.urandom(100)
    start = time.perf_counter()
    for k in range(TXNS):
        await store.execute("INSERT INTO t VALUES (?, ?)", (k, row))
        await store.start_commit(_checkpoint(k), None)
    rate = TXNS / (time.perf_counter() - start)
    await store.close()
    await rec.stop()
    return rate


async def recorded_sqlite_pipelined_txn_per_s(stub: pb_grpc.JournalStub, directory: Path
                                              ) -> float:
    """The same, each transaction running while the previous commit reaches the log.

    A consumer's transactions overlap this way: the next one starts once the
    previous commit is started, and only its acknowledgements wait for it.
    """
    rec = await Recorder.start(SQLITE_LOG + "-pipelined", FSM(), new_author(), str(directory),
                               stub)
    store = await SQLiteStore.open(directory, rec, bootstrap_sql=SCHEMA)
    row = os.urandom(100)
    start = time.perf_counter()
    in_flight: Awaitable[None] | None = None
    for k in range(TXNS):
        await store.execute("INSERT INTO t VALUES (?, ?)", (k, row))
        commit = store.start_commit(_checkpoint(k), None)
        if in_flight is not None:
            await in_flight
        in_flight = commit
    if in_flight is not None:
        await in_flight
    rate = TXNS / (time.perf_counter() - start)
    await store.close()
    await rec.stop()
    return rate


def plain_sqlite_txn_per_s(directory: Path) -> float:
    """The same transactions on local disk, WAL with synchronous=FULL (an fsync per commit)."""
    directory.mkdir(parents=True)
    conn = apsw.Connection(str(directory / "plain.db"))
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute(SCHEMA)
    conn.execute("CREATE TABLE cp (rowid INTEGER PRIMARY KEY, checkpoint BLOB)")
    conn.execute("INSERT INTO cp VALUES (0, x'')")
    row = os.urandom(100)
    start = time.perf_counter()
    for k in range(TXNS):
        with conn:
            conn.execute("INSERT INTO t VALUES (?, ?)", (k, row))
            conn.execute("UPDATE cp SET checkpoint = ?", (_checkpoint(k).SerializeToString(),))
    rate = TXNS / (time.perf_counter() - start)
    conn.close()
    return rate


async def write_files(rec: Recorder, directory: Path, prefix: str, mb: int) -> list[Path]:
    """`mb` MiB in 16 files written in 256 KiB chunks."""
    chunk, paths = os.urandom(256 * 1024), []
    for i in range(16):
        paths.append(directory / f"{prefix}-{i:02d}")
        f = rec.open_file(str(paths[-1]), create=True, truncate=False)
        for offset in range(0, mb * MiB // 16, len(chunk)):
            f.write_at(chunk, offset)
        await rec.barrier()
    return paths


async def record_playback_log(stub: pb_grpc.JournalStub, directory: Path) -> None:
    """PLAYBACK_MB of live data."""
    rec = await Recorder.start(PLAYBACK_LOG, FSM(), new_author(), str(directory), stub)
    await write_files(rec, directory, "live", PLAYBACK_MB)
    await rec.stop()


async def record_mostly_dead_log(stub: pb_grpc.JournalStub, directory: Path) -> rpb.FSMHints:
    """DEAD_MB of files removed again, then LIVE_MB of live ones; the hints at the end."""
    rec = await Recorder.start(HINTS_LOG, FSM(), new_author(), str(directory), stub)
    for path in await write_files(rec, directory, "dead", DEAD_MB):
        rec.remove(str(path))
    await write_files(rec, directory, "live", LIVE_MB)
    hints = await rec.build_hints()
    await rec.stop()
    return hints


async def play_s(stub: pb_grpc.JournalStub, hints: rpb.FSMHints, directory: Path
                 ) -> tuple[float, int]:
    """Seconds to play `hints` into `directory` to the write head, and the head."""
    elapsed, progress = await timed_play(stub, hints, directory)
    return elapsed, progress.offset


async def playback_mb_s(stub: pb_grpc.JournalStub, directory: Path) -> float:
    elapsed, head = await play_s(stub, rpb.FSMHints(log=PLAYBACK_LOG), directory)
    return head / elapsed / 1e6


async def measure(broker: str, runs: int) -> dict[str, float]:
    out: dict[str, float] = {}
    tmp = Path(tempfile.mkdtemp(prefix="gazette-bench-recoverylog-"))
    try:
        async with journal_stub(broker) as stub:
            specs = [journal_spec(n, length=512 * MiB, refresh_s=60)
                     for n in (SQLITE_LOG, SQLITE_LOG + "-pipelined", PLAYBACK_LOG, HINTS_LOG,
                               sqlite_compaction_bench.COMPACT_LOG)]
            await apply_journals(stub, pb.ApplyRequest(changes=[
                pb.ApplyRequest.Change(upsert=s, expect_mod_revision=-1) for s in specs]))
            for spec in specs:
                await append_retrying(stub, spec.name, b"")  # waits for assignment
            out["recorder_sqlite_txn_per_s"] = await recorded_sqlite_txn_per_s(
                stub, tmp / "recorded")
            out["recorder_sqlite_pipelined_txn_per_s"] = await (
                recorded_sqlite_pipelined_txn_per_s(stub, tmp / "pipelined"))
            out["sqlite_plain_txn_per_s"] = await asyncio.to_thread(
                plain_sqlite_txn_per_s, tmp / "plain")
            await record_playback_log(stub, tmp / "source")
            out["playback_log_mb"] = PLAYBACK_MB
            out["playback_ceiling_mb_s"] = await broker_bench.read_throughput(
                stub, PLAYBACK_LOG, runs)
            rates = [await playback_mb_s(stub, tmp / f"played-{run}") for run in range(runs)]
            out["playback_mb_s"] = sorted(rates)[len(rates) // 2]
            hints = await record_mostly_dead_log(stub, tmp / "mostly-dead")
            out["playback_from_hints_live_mb"] = LIVE_MB
            out["playback_from_hints_log_mb"] = DEAD_MB + LIVE_MB
            out["playback_from_hints_s"] = min(
                [(await play_s(stub, hints, tmp / "from-hints"))[0] for _ in range(runs)])
            out["playback_from_zero_s"] = min([(await play_s(
                stub, rpb.FSMHints(log=HINTS_LOG), tmp / "from-zero"))[0] for _ in range(runs)])
            out.update(await sqlite_compaction_bench.measure(stub, tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out["recorder_sqlite_ratio"] = out["recorder_sqlite_txn_per_s"] / out["sqlite_plain_txn_per_s"]
    out["recorder_sqlite_pipelined_ratio"] = (out["recorder_sqlite_pipelined_txn_per_s"]
                                              / out["sqlite_plain_txn_per_s"])
    out["playback_ratio"] = out["playback_mb_s"] / out["playback_ceiling_mb_s"]
    out["playback_from_hints_ratio"] = out["playback_from_hints_s"] / out["playback_from_zero_s"]
    return {k: round(v, 3) for k, v in out.items()}


def main() -> None:
    from gazette_core.local import stack as local_stack

    with tempfile.TemporaryDirectory(prefix="gazette-bench-") as tmp:
        stack = local_stack.up(Path(tmp) / "single", brokers=1, zones=1, activate=False)
        try:
            time.sleep(0.5)
            result = asyncio.run(measure(stack.brokers[0].endpoint, 3))
        finally:
            local_stack.down(stack.directory)
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
