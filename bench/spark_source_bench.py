"""The `gazette` data source: batch reads and writes against the same run's ceilings.

- `spark_read_mb_s`: `spark.read.format("gazette")` of SPARK_MB of small JSON
  messages in JOURNALS journals, counted (no schema: the framing's columns);
  `spark_read_schema_mb_s` the same with a schema given, `spark_read_agg_mb_s`
  with the schema and `groupBy(key).agg(sum(n))`; against
  `spark_read_gazctl_mb_s`, `gazctl journals read` of the same journals to
  /dev/null (`spark_read_ratio` = spark / gazctl);
- `spark_read_one_journal_mb_s`: the same bytes in one journal, split into
  ranges of a quarter of it (`splitBytes`: as many tasks as the four-journal
  read), against `gazctl journals read` of that journal
  (`spark_read_one_journal_ratio`);
- the anchor, Spark's own file scan in the same session: the same bytes as
  local JSON-lines files, one a journal, read with
  `spark.read.schema(SCHEMA).json(dir)`, counted (`spark_files_count_mb_s`)
  and aggregated as above (`spark_files_agg_mb_s`). Speed ratios, gazette's
  MB/s over the anchor's: `spark_count_vs_files` (the schemaless count against
  the files' count), `spark_agg_vs_files` (the aggregations),
  `spark_split_vs_files` (the one-journal split read against the files' count);
- the ceilings (spark_ceilings.py): a Python reader that yields batches built
  beforehand, of a schemaless read's columns and of the schema's, against the
  same anchor (`spark_ceiling_count_vs_files`, `spark_ceiling_agg_vs_files`),
  and a Python writer that drops its rows against `df.write.json`
  (`spark_ceiling_write_vs_files`): the most any Python data source reaches
  here, the bar the `gazette` ratios are to be read against;
- `spark_write_msgs_per_s`: `df.write.format("gazette")` of WRITE_ROWS small
  rows into one journal, against `spark_write_append_records_per_s`, the
  AppendService enqueueing records of the same size (`spark_write_ratio`),
  and against `df.write.json` of the same DataFrame to a local directory
  (`spark_write_files_rows_per_s`; `spark_write_vs_files`, rows/s over rows/s);
- `spark_stream_latency_p50_ms` / `_p99_ms` (spark_stream_bench.py).

Spark runs in local mode on this machine's cores, its session started before
anything is timed. MB are content bytes, persisted to `file://` fragments but
for each journal's spool. Each figure is the best of RUNS; the reads (and the
writes) compared by a ratio run in turn, RUNS rounds, so a load that comes
and goes weighs on all sides. A part whose mode of the data source fails (not
built yet, or broken) reports `<name>_error` with the failure's first line
instead of its figures. Alone: `python -m bench.spark_source_bench` (on its own
local stack; BENCH_SPARK_MB and BENCH_SPARK_WRITE_ROWS scale it down).
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from bench import broker_bench, spark_ceilings, spark_stream_bench
from bench.journals_frame_bench import best_seconds, gazctl_read, json_chunks, wait_persisted
from gazette_core.broker.client.appender import append_retrying
from gazette_core.broker.client.journals import apply_journals
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.local import stack as local_stack
from gazette_core.testing.broker import journal_spec, journal_stub
from spark_jobs.datasource import FORMAT, register
from spark_jobs.session import get_session, stop_session

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

MiB = 1 << 20
SPARK_MB = int(os.environ.get("BENCH_SPARK_MB", "256"))
WRITE_ROWS = int(os.environ.get("BENCH_SPARK_WRITE_ROWS", "200000"))
JOURNALS = 4
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
NDJSON = ("content-type", "application/x-ndjson")
MANY = "app=bench-spark"
ONE = "app=bench-spark-one"
WRITTEN = "bench/spark-written"
SCHEMA = "n LONG, key STRING, text STRING"


async def populate(broker: str, files: Path) -> int:
    """JOURNALS journals and one more holding all their bytes; their content bytes, persisted.

    The same bytes also go to `files`, one JSON-lines file per journal: the anchor's input.
    """
    files.mkdir(parents=True, exist_ok=True)
    names = [f"bench/spark/{i}" for i in range(JOURNALS)]
    one = "bench/spark-one"
    specs = [journal_spec(n, length=8 * MiB, labels=(("app", "bench-spark"), NDJSON),
                          codec=pb.SNAPPY) for n in names]
    specs.append(journal_spec(one, length=8 * MiB, labels=(("app", "bench-spark-one"), NDJSON),
                              codec=pb.SNAPPY))
    specs.append(journal_spec(WRITTEN, length=64 * MiB, labels=(NDJSON,), refresh_s=60))
    total = 0
    async with journal_stub(broker) as stub:
        await apply_journals(stub, pb.ApplyRequest(changes=[
            pb.ApplyRequest.Change(upsert=s, expect_mod_revision=-1) for s in specs]))
        for i, name in enumerate(names):
            with (files / f"part-{i}.json").open("wb") as out:
                for chunk in json_chunks(i, SPARK_MB * MiB // JOURNALS):
                    await append_retrying(stub, name, chunk)
                    await append_retrying(stub, one, chunk)
                    out.write(chunk)
                    total += len(chunk)
        await wait_persisted(stub, [*names, one])
    return total


def first_line(exc: BaseException) -> str:
    """The line a failed Spark job leads with: the Python worker's error, if there is one."""
    text = str(exc)
    for line in text.splitlines():
        if "Error: " in line and "Traceback" not in line:
            return line.strip()
    return (text.splitlines() or [type(exc).__name__])[0].strip()


def guarded(name: str, part: Callable[[], dict[str, float]]) -> dict[str, float | str]:
    """`part`'s figures, or `<name>_error` with its failure's first line."""
    try:
        return dict(part())
    except Exception as exc:  # reported in the results: the bench goes on with its other parts
        return {f"{name}_error": first_line(exc)}


def alternated(bodies: dict[str, Callable[[], object]], runs: int) -> dict[str, float]:
    """Each body's best seconds, the bodies run in turn RUNS times: a load that comes and
    goes weighs on all of them alike, so their ratios hold on a busy machine."""
    times: dict[str, list[float]] = {name: [] for name in bodies}
    for _ in range(runs):
        for name, body in bodies.items():
            start = time.perf_counter()
            body()
            times[name].append(time.perf_counter() - start)
    return {name: min(taken) for name, taken in times.items()}


def reads(spark: SparkSession, broker: str, root: str, files: Path,
          total: int) -> dict[str, float]:
    def frame(selector: str, schema: str | None = None, **options: str) -> DataFrame:
        reader = spark.read.format(FORMAT).option("selector", selector) \
            .option("broker", broker).option("fileRoot", root).options(**options)
        return (reader.schema(schema) if schema else reader).load()

    def anchor() -> DataFrame:
        return spark.read.schema(SCHEMA).json(str(files))

    def ceiling(kind: str) -> DataFrame:
        return spark.read.format(spark_ceilings.READER).option("files", str(files)) \
            .option("kind", kind).load()

    def aggregate(df: DataFrame) -> object:
        return df.groupBy("key").agg(F.sum("n")).collect()

    split = str(max(MiB, total // JOURNALS))
    bodies: dict[str, Callable[[], object]] = {
        "count": lambda: frame(MANY).count(),
        "schema": lambda: frame(MANY, SCHEMA).count(),
        "agg": lambda: aggregate(frame(MANY, SCHEMA)),
        "split": lambda: frame(ONE, splitBytes=split).count(),
        "files_count": lambda: anchor().count(),
        "files_agg": lambda: aggregate(anchor()),
        "ceiling_count": lambda: ceiling("row").count(),
        "ceiling_agg": lambda: aggregate(ceiling("doc")),
    }
    for _ in range(2):  # warm-up: workers started (and their ceiling batches built), stores
        for body in bodies.values():  # built, the files in the page cache
            body()
    took = alternated(bodies, RUNS)
    mb = total / 1e6
    out = {"spark_read_mb_s": mb / took["count"],
           "spark_read_schema_mb_s": mb / took["schema"],
           "spark_read_agg_mb_s": mb / took["agg"],
           "spark_read_one_journal_mb_s": mb / took["split"],
           "spark_files_count_mb_s": mb / took["files_count"],
           "spark_files_agg_mb_s": mb / took["files_agg"],
           "spark_read_gazctl_mb_s": mb / best_seconds(lambda: gazctl_read(broker, MANY), RUNS)}
    # Speed ratios on the same bytes: gazette's MB/s over the file scan's.
    out["spark_count_vs_files"] = took["files_count"] / took["count"]
    out["spark_agg_vs_files"] = took["files_agg"] / took["agg"]
    out["spark_split_vs_files"] = took["files_count"] / took["split"]
    # The same ratios for a Python reader that does no work: the most the API allows here.
    out["spark_ceiling_count_vs_files"] = took["files_count"] / took["ceiling_count"]
    out["spark_ceiling_agg_vs_files"] = took["files_agg"] / took["ceiling_agg"]
    out["spark_read_ratio"] = out["spark_read_mb_s"] / out["spark_read_gazctl_mb_s"]
    out["spark_read_one_journal_gazctl_mb_s"] = mb / best_seconds(
        lambda: gazctl_read(broker, ONE), RUNS)
    out["spark_read_one_journal_ratio"] = (out["spark_read_one_journal_mb_s"]
                                           / out["spark_read_one_journal_gazctl_mb_s"])
    return out


def rows(spark: SparkSession, count: int) -> DataFrame:
    """`count` small rows, cached: what is timed is the write, not their making."""
    df = spark.range(count).selectExpr(
        "id AS n", "concat('k', CAST(id % 97 AS STRING)) AS key",
        "'lorem ipsum dolor sit amet lorem ipsum dolor sit amet' AS text").cache()
    df.count()
    return df


def writes(spark: SparkSession, broker: str, tmp: Path) -> dict[str, float]:
    df = rows(spark, WRITE_ROWS)
    target = str(tmp / "written-json")

    def write() -> None:
        df.write.format(FORMAT).option("broker", broker).option("journal", WRITTEN) \
            .mode("append").save()

    def write_files() -> None:
        df.write.mode("overwrite").json(target)

    def write_null() -> None:
        df.write.format(spark_ceilings.WRITER).mode("append").save()

    write()  # warm-up, and the failure of a sink that is not there yet
    write_files()
    write_null()
    took = alternated({"gazette": write, "files": write_files, "null": write_null}, RUNS)
    out = {"spark_write_msgs_per_s": WRITE_ROWS / took["gazette"],
           "spark_write_files_rows_per_s": WRITE_ROWS / took["files"],
           "spark_write_vs_files": took["files"] / took["gazette"],
           # A Python writer that drops its rows: the most the API allows here.
           "spark_ceiling_write_vs_files": took["files"] / took["null"]}
    # The same JSON lines as the rows make, each with its UUID: the sink's messages.
    lines = [line for chunk in json_chunks(JOURNALS, 2 * MiB) for line in chunk.splitlines(True)]
    rates = [asyncio.run(append_rate(broker, lines)) for _ in range(RUNS)]
    out["spark_write_append_records_per_s"] = max(rates)
    out["spark_write_ratio"] = out["spark_write_msgs_per_s"] / max(rates)
    return out


async def append_rate(broker: str, lines: list[bytes]) -> float:
    async with journal_stub(broker) as stub:
        return await broker_bench.record_rate(stub, WRITTEN, WRITE_ROWS, lines)


def measure(stack: local_stack.Stack, tmp: Path) -> dict[str, float | str]:
    broker = stack.brokers[0].endpoint
    files = tmp / "spark-files"
    total = asyncio.run(populate(broker, files))
    spark_ceilings.with_repo_on_path()  # Before the JVM starts: its workers import the module.
    spark = get_session("local[*]", app_name="gazette-bench-spark")
    register(spark)
    spark_ceilings.register(spark)
    try:
        out = guarded("spark_read", lambda: reads(
            spark, broker, str(stack.directory / "fragments"), files, total))
        out.update(guarded("spark_write", lambda: writes(spark, broker, tmp)))
        out.update(guarded("spark_stream", lambda: spark_stream_bench.measure(
            spark, broker, tmp / "checkpoint", str(stack.directory / "fragments"))))
    finally:
        stop_session()
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in out.items()}


def run(tmp: Path) -> dict[str, float | str]:
    """The figures, on a one-broker stack of their own under `tmp`."""
    stack = local_stack.up(tmp / "spark", brokers=1, zones=1, activate=False)
    try:
        return measure(stack, tmp)
    finally:
        local_stack.down(stack.directory)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="gazette-bench-spark-") as tmp:
        print(json.dumps(run(Path(tmp)), sort_keys=True))
