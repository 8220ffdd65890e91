"""Latency of the `gazette` streaming source: one message appended, until its row is in a batch.

`spark_stream_latency_p50_ms` / `_p99_ms`: a query of
`spark.readStream.format("gazette")` with the default trigger (a micro-batch
as soon as the previous one ends) hands each micro-batch to `foreachBatch`,
which collects its rows on the driver. Messages are appended one at a time,
the next once the previous has arrived; a message's latency runs from just
before its append to the collection of the batch holding it.

`spark_stream_first_batch_s`: the session's first streaming query
(`processingTime`, 100 ms) on a journal holding ten messages, from `start()`
until its first micro-batch reaches `foreachBatch`, the stack idle.

Part of spark_source_bench.py's run, or alone: `python -m bench.spark_stream_bench`.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from gazette_core.broker.client.appender import append_retrying
from gazette_core.broker.client.journals import apply_journals
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.message.uuid import Flags, build_uuid
from gazette_core.testing.broker import journal_spec, journal_stub
from spark_jobs.datasource import FORMAT

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

MESSAGES = int(os.environ.get("BENCH_STREAM_MSGS", "200"))
JOURNAL = "bench/spark-stream"
PRODUCER = bytes.fromhex("0a0a0a0a0a0a")
# A message that takes longer than this has been lost: the bench fails rather than hangs.
ARRIVAL_LIMIT_S = 60.0


class Arrivals:
    """When each message number reached a `foreachBatch` (called on a Py4J thread)."""

    def __init__(self) -> None:
        self.at: dict[int, float] = {}
        self.changed = threading.Condition()

    def batch(self, df: DataFrame, _batch_id: int) -> None:
        numbers = [row.n for row in df.select("n").collect()]
        now = time.perf_counter()
        with self.changed:
            for n in numbers:
                self.at.setdefault(n, now)
            self.changed.notify_all()

    def wait(self, n: int, query: StreamingQuery) -> float:
        """When message `n` arrived; the query's own error if it stopped first."""
        deadline = time.monotonic() + ARRIVAL_LIMIT_S
        with self.changed:
            while n not in self.at:
                if not query.isActive:
                    failure = query.exception()
                    raise RuntimeError(str(failure) if failure else "the query stopped")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"message {n} reached no batch within "
                                       f"{ARRIVAL_LIMIT_S:g}s")
                self.changed.wait(timeout=0.5)  # wakes on arrival; else looks at the query
            return self.at[n]


def line(n: int) -> bytes:
    u = build_uuid(PRODUCER, (1_000 + n) << 4, Flags.OUTSIDE_TXN)
    return json.dumps({"uuid": str(u), "n": n}).encode() + b"\n"


async def latencies(stub: pb_grpc.JournalStub, arrivals: Arrivals,
                    query: StreamingQuery) -> list[float]:
    """Milliseconds from append to batch, of messages 1..MESSAGES (0 warms the query up)."""
    out = []
    for n in range(MESSAGES + 1):
        start = time.perf_counter()
        await append_retrying(stub, JOURNAL, line(n))
        arrived = await asyncio.to_thread(arrivals.wait, n, query)
        if n:
            out.append((arrived - start) * 1000)
    return out


async def create_journal(broker: str) -> None:
    """The journal, before the query starts: a selector must match something."""
    async with journal_stub(broker) as stub:
        await apply_journals(stub, pb.ApplyRequest(changes=[pb.ApplyRequest.Change(
            upsert=journal_spec(JOURNAL, labels=(("app", "bench-spark-stream"),
                                                 ("content-type", "application/x-ndjson"))),
            expect_mod_revision=-1)]))


async def appended(broker: str, arrivals: Arrivals, query: StreamingQuery) -> list[float]:
    async with journal_stub(broker) as stub:
        return await latencies(stub, arrivals, query)


async def prefill(broker: str) -> None:
    """Messages for the first query's first micro-batch (numbered below the latency run's)."""
    async with journal_stub(broker) as stub:
        await append_retrying(stub, JOURNAL, b"".join(line(-n) for n in range(1, 11)))


def first_batch(spark: SparkSession, broker: str, file_root: str, checkpoint: Path) -> float:
    """Seconds from a new processingTime query's start to its first micro-batch."""
    arrived = threading.Event()
    stream = spark.readStream.format(FORMAT).option("selector", "app=bench-spark-stream") \
        .option("broker", broker).option("fileRoot", file_root).schema("n LONG").load()
    started = time.perf_counter()
    query = stream.writeStream.foreachBatch(lambda _df, _id: arrived.set()) \
        .option("checkpointLocation", str(checkpoint)) \
        .trigger(processingTime="100 milliseconds").start()
    try:
        deadline = time.monotonic() + ARRIVAL_LIMIT_S
        while not arrived.wait(0.01):
            if not query.isActive or time.monotonic() > deadline:
                raise RuntimeError(f"no micro-batch: {query.exception() or query.status}")
        return time.perf_counter() - started
    finally:
        query.stop()


def measure(spark: SparkSession, broker: str, checkpoint: Path,
            file_root: str = "") -> dict[str, float]:
    """The latencies; `file_root` is the brokers' (the first batch reads persisted content)."""
    asyncio.run(create_journal(broker))
    asyncio.run(prefill(broker))
    time.sleep(1)  # An idle stack when the first query starts.
    file_root = file_root or os.environ.get("BROKER_FILE_ROOT", "")
    first_s = first_batch(spark, broker, file_root, checkpoint.with_name("first-batch"))
    arrivals = Arrivals()
    stream = spark.readStream.format(FORMAT).option("selector", "app=bench-spark-stream") \
        .option("broker", broker).option("fileRoot", file_root).schema("n LONG").load()
    query = stream.writeStream.foreachBatch(arrivals.batch) \
        .option("checkpointLocation", str(checkpoint)).start()
    try:
        ms = asyncio.run(appended(broker, arrivals, query))
    finally:
        query.stop()
    ms.sort()
    return {"spark_stream_latency_p50_ms": ms[len(ms) // 2],
            "spark_stream_latency_p99_ms": ms[int(len(ms) * 0.99)],
            "spark_stream_first_batch_s": first_s}


def main() -> None:
    """The streaming figures alone, on a one-broker stack of their own."""
    from gazette_core.local import stack as local_stack
    from spark_jobs.datasource import register
    from spark_jobs.session import get_session, stop_session

    with tempfile.TemporaryDirectory(prefix="gazette-bench-stream-") as tmp:
        stack = local_stack.up(Path(tmp) / "stack", brokers=1, zones=1, activate=False)
        try:
            spark = get_session("local[*]", app_name="gazette-bench-stream")
            register(spark)
            try:
                figures = measure(spark, stack.brokers[0].endpoint, Path(tmp) / "checkpoint",
                                  str(stack.directory / "fragments"))
            finally:
                stop_session()
        finally:
            local_stack.down(stack.directory)
    print(json.dumps({k: round(v, 3) for k, v in figures.items()}, sort_keys=True))


if __name__ == "__main__":
    main()
