"""Journals as DataFrames: JSON-lines journals read into a DataFrame and counted.

- `journals_frame_mb_s`: `read_journals(...).count()` with the schema inferred
  (the default: one pass infers, the cached rows are then counted), Spark local
  mode on this machine's cores, the session already started;
- `journals_frame_schema_mb_s`: the same with the schema given (no inference);
- `journals_frame_read_mb_s`: `gazctl journals read` of the same journals to
  /dev/null, measured in the same run: the baseline to beat
  (`journals_frame_ratio` = frame / read).

MB are content bytes of the journals (FRAME_MB in total over JOURNALS
journals, persisted to `file://` fragments but for each journal's spool).
Each figure is the best of RUNS. Run alone with
`python -m bench.journals_frame_bench` (on its own local stack).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from gazette_core.broker.client.appender import append_retrying
from gazette_core.broker.client.journals import apply_journals, list_fragments
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.local import stack as local_stack
from gazette_core.message.uuid import Flags, build_uuid
from gazette_core.testing.broker import journal_spec, journal_stub
from spark_jobs.journals_frame import read_journals
from spark_jobs.session import get_session, stop_session

MiB = 1 << 20
FRAME_MB = int(os.environ.get("BENCH_FRAME_MB", "64"))
JOURNALS = 4
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
SELECTOR = "app=bench-frame"
PRODUCER = bytes.fromhex("050505050505")


def json_chunks(journal: int, size: int) -> list[bytes]:
    """Committed JSON messages, about 150 bytes each, in append chunks of about 1 MiB.

    Each `journal` number is a producer of its own, so the chunks of several
    numbers may also go to one journal, all of them committed.
    """
    chunks, chunk, total, n = [], bytearray(), 0, 0
    while total < size:
        u = build_uuid(PRODUCER[:5] + bytes([journal]), (1_000_000 + n) << 4, Flags.OUTSIDE_TXN)
        line = json.dumps({"uuid": str(u), "n": n, "key": f"k{n % 97}",
                           "text": "lorem ipsum dolor sit amet " * 2}).encode() + b"\n"
        chunk += line
        total += len(line)
        n += 1
        if len(chunk) >= MiB:
            chunks.append(bytes(chunk))
            chunk = bytearray()
    if chunk:
        chunks.append(bytes(chunk))
    return chunks


async def populate(broker: str) -> int:
    """Write the journals; return their content bytes once all but the spools persisted."""
    names = [f"bench/frame/{i}" for i in range(JOURNALS)]
    labels = (("app", "bench-frame"), ("content-type", "application/x-ndjson"))
    total = 0
    async with journal_stub(broker) as stub:
        await apply_journals(stub, pb.ApplyRequest(changes=[
            pb.ApplyRequest.Change(upsert=journal_spec(n, length=8 * MiB, labels=labels,
                                                       codec=pb.SNAPPY),
                                   expect_mod_revision=-1) for n in names]))
        for i, name in enumerate(names):
            for chunk in json_chunks(i, FRAME_MB * MiB // JOURNALS):
                await append_retrying(stub, name, chunk)
                total += len(chunk)
        await wait_persisted(stub, names)
    return total


async def wait_persisted(stub: pb_grpc.JournalStub, names: list[str],
                         limit: float = 120) -> None:
    """Until every fragment of `names` but each spool is persisted."""
    deadline = time.monotonic() + limit
    for name in names:
        while True:
            frags = await list_fragments(stub, pb.FragmentsRequest(journal=name))
            if all(f.spec.mod_time for f in frags[:-1]):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name} was not persisted within {limit:g}s")
            await asyncio.sleep(0.2)


def best_seconds(body: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        body()
        times.append(time.perf_counter() - start)
    return min(times)


def gazctl_read(broker: str, selector: str = SELECTOR) -> None:
    """`gazctl journals read` of the journals `selector` matches, to /dev/null."""
    subprocess.run([sys.executable, "-m", "gazctl.main", "journals", "read", "-l", selector,
                    "--broker.address", broker, "--output-file", os.devnull],
                   check=True, capture_output=True)


def measure(stack: local_stack.Stack) -> dict[str, float]:
    broker = stack.brokers[0].endpoint
    root = str(stack.directory / "fragments")
    total = asyncio.run(populate(broker))
    spark = get_session("local[*]", app_name="gazette-bench-frame")

    def frame(schema: str | None) -> Callable[[], object]:
        return lambda: read_journals(spark, SELECTOR, broker=broker, file_root=root,
                                     schema=schema).count()

    try:
        frame(None)()  # warm-up: Python workers started, stores built
        inferred = best_seconds(frame(None), RUNS)
        given = best_seconds(frame("n LONG, key STRING, text STRING"), RUNS)
    finally:
        stop_session()
    read = best_seconds(lambda: gazctl_read(broker), RUNS)
    mb = total / 1e6
    out = {"journals_frame_mb_s": mb / inferred, "journals_frame_schema_mb_s": mb / given,
           "journals_frame_read_mb_s": mb / read}
    out["journals_frame_ratio"] = out["journals_frame_mb_s"] / out["journals_frame_read_mb_s"]
    return {k: round(v, 3) for k, v in out.items()}


def run(tmp: Path) -> dict[str, float]:
    """The figures, on a one-broker stack of their own under `tmp`."""
    stack = local_stack.up(tmp / "frame", brokers=1, zones=1, activate=False)
    try:
        return measure(stack)
    finally:
        local_stack.down(stack.directory)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="gazette-bench-frame-") as tmp:
        print(json.dumps(run(Path(tmp)), sort_keys=True))
