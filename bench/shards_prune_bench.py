"""`shards_prune_fragments_per_s`: recovery-log fragments the shards prune job deletes per
second, on FRAGMENTS fragments of LOGS logs in a `file://` store of a local stack.

The job runs as `gazctl shards prune` runs it, minus the consumer: hand-made hints
(one unbounded segment past every fragment) go to `prune_gathered`, whose Spark
executors (local mode) list each log through the broker and delete its fragments.
A dry run first starts the JVM and the executors' Python workers (its wall time,
start-up included, is `shards_prune_cold_dry_run_s`); the timed run is then the
job's steady throughput, as it is over a production-sized set of logs. The ceiling
to beat, measured in the same run on the same number of files, is a serial
single-process loop of the store's deletes.
Run alone with `python -m bench.shards_prune_bench`.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from pathlib import Path

from gazette_core.broker.client.channel import close_channels, journal_stub
from gazette_core.broker.client.journals import apply_journals, list_fragments
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.fragment_ext import content_path
from gazette_core.broker.stores.registry import get_store
from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.local import stack as local_stack
from gazette_core.testing.broker import journal_spec
from spark_jobs.session import DEFAULT_MASTER, stop_session
from spark_jobs.shards_prune import Gathered, prune_gathered

FRAGMENTS = int(os.environ.get("BENCH_PRUNE_FRAGMENTS", "20000"))
LOGS = 8
SIZE = 4096  # content bytes a fragment claims (its file is empty: only names are listed)
RECOVERY_LOG = ("content-type", "application/x-gazette-recoverylog")
WAIT_S = 120.0


def log_names() -> list[str]:
    return [f"bench/prune/recovery-logs/shard-{n:03d}" for n in range(LOGS)]


def fragments_of(log: str, count: int) -> list[pb.Fragment]:
    return [pb.Fragment(journal=log, begin=i * SIZE, end=(i + 1) * SIZE,
                        sum=pb.SHA1Sum(part1=i + 1), compression_codec=pb.NONE,
                        backing_store="file:///") for i in range(count)]


def write_files(root: Path, fragments: list[pb.Fragment]) -> None:
    for log in {f.journal for f in fragments}:
        (root / log).mkdir(parents=True, exist_ok=True)
    for f in fragments:
        (root / content_path(f)).touch()


async def serial_deletes_per_s(root: Path, fragments: list[pb.Fragment]) -> float:
    """The ceiling: one process deleting every fragment from its store, one at a time."""
    store = get_store("file:///", str(root))
    start = time.perf_counter()
    for f in fragments:
        await store.delete(f)
    return len(fragments) / (time.perf_counter() - start)


async def wait_listed(broker: str, per_log: int) -> None:
    """Until the broker's index (refreshed from the store) lists every file."""
    deadline = time.monotonic() + WAIT_S
    stub = journal_stub(broker)
    for log in log_names():
        while len(await list_fragments(stub, pb.FragmentsRequest(journal=log))) < per_log:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{log}: the broker did not list {per_log} fragments")
            await asyncio.sleep(0.2)
    await close_channels()


async def create_logs(broker: str) -> None:
    specs = [journal_spec(n, length=1 << 30, refresh_s=1, labels=(RECOVERY_LOG,))
             for n in log_names()]
    await apply_journals(journal_stub(broker), pb.ApplyRequest(changes=[
        pb.ApplyRequest.Change(upsert=s, expect_mod_revision=-1) for s in specs]))
    await close_channels()


def gathered_logs(per_log: int) -> Gathered:
    tasks = {log: [rpb.Segment(author=1, first_seq_no=1, last_seq_no=1, log=log,
                               first_offset=per_log * SIZE + 1)] for log in log_names()}
    return Gathered(LOGS, tasks, {}, {log: ["file:///"] for log in tasks})


def cold_dry_run_s(broker: str, root: Path, per_log: int) -> float:
    """A first (dry) run: the JVM and the executors' workers start, every log is listed."""
    start = time.perf_counter()
    summary = prune_gathered(gathered_logs(per_log), broker, dry_run=True,
                             master=DEFAULT_MASTER, file_root=str(root))
    if summary.fragments_pruned != per_log * LOGS:
        raise RuntimeError(f"dry run counted {summary.fragments_pruned} of {per_log * LOGS}")
    return time.perf_counter() - start


def spark_deletes_per_s(broker: str, root: Path, per_log: int) -> float:
    """The job: every log's fragments listed and deleted on Spark executors."""
    start = time.perf_counter()
    summary = prune_gathered(gathered_logs(per_log), broker, master=DEFAULT_MASTER,
                             file_root=str(root))
    elapsed = time.perf_counter() - start
    if summary.fragments_pruned != per_log * LOGS:
        raise RuntimeError(f"pruned {summary.fragments_pruned} of {per_log * LOGS}: "
                           f"{summary.as_dict()}")
    return summary.fragments_pruned / elapsed


def measure(stack: local_stack.Stack) -> dict[str, float]:
    broker = stack.brokers[0].endpoint
    root = stack.directory / "fragments"
    per_log = FRAGMENTS // LOGS
    fragments = [f for log in log_names() for f in fragments_of(log, per_log)]
    asyncio.run(create_logs(broker))
    write_files(root, fragments)
    ceiling = asyncio.run(serial_deletes_per_s(root, fragments))
    write_files(root, fragments)
    asyncio.run(wait_listed(broker, per_log))
    try:
        cold = cold_dry_run_s(broker, root, per_log)
        rate = spark_deletes_per_s(broker, root, per_log)
    finally:
        stop_session()
    return {"shards_prune_fragments_per_s": round(rate, 1),
            "shards_prune_cold_dry_run_s": round(cold, 2),
            "shards_prune_serial_ceiling_per_s": round(ceiling, 1),
            "shards_prune_ratio": round(rate / ceiling, 3)}


def run(tmp: Path) -> dict[str, float]:
    """Every figure, on a stack of its own under `tmp`."""
    stack = local_stack.up(tmp / "shards-prune", brokers=1, activate=False)
    try:
        return measure(stack)
    finally:
        local_stack.down(stack.directory)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="gazette-bench-") as tmp:
        print(json.dumps(run(Path(tmp)), sort_keys=True))
