"""`df.writeStream.format("gazette")`: each micro-batch committed once, across kills and replays.

A query killed mid-stream and restarted from its checkpoint, and a query
whose last commit Spark forgot (its `commits/` entry deleted, as when the
driver dies between the sink's commit and Spark's commit log) and which
therefore replays that micro-batch: read_committed() of the target sees each
input row once. Consumers read through the same sequencer rules, so what
read_committed() shows is what they process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spark_jobs.frame_export import spark_failure
from tests.spark_jobs.sink.sink_support import (
    JSON_TYPE,
    committed,
    records,
    sink_session,
    sink_stack,
    wait_for,
)

P = "sink-stream"
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with sink_stack(tmp_path_factory, P, {"replayed": JSON_TYPE, "killed": JSON_TYPE,
                                          "origin": JSON_TYPE, "copy": JSON_TYPE,
                                          "reused": JSON_TYPE}) as address:
        yield address


@pytest.fixture(scope="module")
def spark(address: str) -> Any:
    return sink_session("local[2]", "sink-stream-test")


def input_files(directory: Path, files: int, rows: int) -> list[int]:
    """`files` JSON files of `rows` numbers each; returns every number written."""
    directory.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        lines = "".join(json.dumps({"n": f * rows + i}) + "\n" for i in range(rows))
        (directory / f"part-{f:03d}.json").write_text(lines)
    return list(range(files * rows))


def numbers(address: str, journal: str) -> list[int]:
    return sorted(doc["n"] for doc in committed(address, journal))


def drain(spark: Any, address: str, source: Path, checkpoint: Path, journal: str,
          sink_id: str = "replayed", per_batch: int = 1) -> None:
    """Run the query of sink_stream_job.py here until it has processed every file."""
    rows = spark.readStream.schema("n LONG").option("maxFilesPerTrigger", per_batch).json(
        str(source))
    # A named query: Spark hands the sink its name among the options.
    (rows.writeStream.queryName(f"drain-{sink_id}").format("gazette").option("broker", address)
     .option("journal", journal).option("sinkId", sink_id)
     .option("checkpointLocation", str(checkpoint))
     .trigger(availableNow=True).start().awaitTermination())


def test_a_replayed_micro_batch_is_not_committed_twice(spark: Any, address: str,
                                                       tmp_path: Path) -> None:
    journal, checkpoint = f"{P}/replayed", tmp_path / "checkpoint"
    expected = input_files(tmp_path / "in", 3, 5)
    drain(spark, address, tmp_path / "in", checkpoint, journal)
    assert numbers(address, journal) == expected
    # Spark forgets it committed the last batch: the restarted query runs it again.
    commits = checkpoint / "commits"
    last = max(commits.glob("[0-9]*"), key=lambda p: int(p.name))
    assert last.name == "2"
    last.unlink()
    (commits / f".{last.name}.crc").unlink(missing_ok=True)
    drain(spark, address, tmp_path / "in", checkpoint, journal)
    assert (checkpoint / "commits" / "2").exists()
    assert numbers(address, journal) == expected
    # The replay did publish its rows (20 row records), only its ACK was refused.
    rows = [line for line in records(address, journal) if b'"n"' in line]
    assert len(rows) == len(expected) + 5


def test_a_streaming_write_needs_a_sink_id(spark: Any, address: str, tmp_path: Path) -> None:
    input_files(tmp_path / "in", 1, 1)
    rows = spark.readStream.schema("n LONG").json(str(tmp_path / "in"))
    with pytest.raises(Exception) as failure:
        (rows.writeStream.format("gazette").option("broker", address)
         .option("journal", f"{P}/killed").option("checkpointLocation", str(tmp_path / "c"))
         .start().awaitTermination())
    assert "option sinkId: a streaming write needs a stable name" in str(
        spark_failure(failure.value))  # type: ignore[arg-type]


def job(address: str, source: Path, checkpoint: Path, journal: str,
        log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.spark_jobs.sink.sink_stream_job", address, str(source),
             str(checkpoint), journal, "killed"],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_a_query_killed_mid_stream_and_restarted_writes_each_row_once(
        spark: Any, address: str, tmp_path: Path) -> None:
    journal, checkpoint, log = f"{P}/killed", tmp_path / "checkpoint", tmp_path / "job.log"
    expected = input_files(tmp_path / "in", 20, 2)
    running = job(address, tmp_path / "in", checkpoint, journal, log)
    try:
        wait_for(lambda: len(list((checkpoint / "commits").glob("[0-9]*"))) >= 3,
                 "three committed micro-batches", limit=90)
    finally:
        os.killpg(running.pid, signal.SIGKILL)
        running.wait()
    assert numbers(address, journal) != expected  # killed before the end
    # Restarted here: the test's own Spark session is already up.
    drain(spark, address, tmp_path / "in", checkpoint, journal, "killed", per_batch=100)
    assert numbers(address, journal) == expected


def test_a_streaming_copy_from_journal_to_journal(spark: Any, address: str,
                                                  tmp_path: Path) -> None:
    """As the docs show it: the read's columns straight into the sink (its value is the
    message; its uuid, offset and journal are the read's metadata)."""
    origin, copy = f"{P}/origin", f"{P}/copy"
    (spark.createDataFrame([(n, f"v{n}") for n in range(6)], "n LONG, v STRING")
     .write.format("gazette").mode("append").option("broker", address).save(origin))
    query = (spark.readStream.format("gazette").option("broker", address)
             .option("selector", f"name={origin}").load()
             .writeStream.format("gazette").option("broker", address).option("journal", copy)
             .option("sinkId", "copy").option("checkpointLocation", str(tmp_path / "c"))
             .trigger(processingTime="100 milliseconds").start())
    try:
        wait_for(lambda: len(committed(address, copy)) >= 6 or query.exception() is not None,
                 "the copied rows")
    finally:
        query.stop()
    assert query.exception() is None
    assert sorted(committed(address, copy), key=lambda d: d["n"]) == [
        {"n": n, "v": f"v{n}"} for n in range(6)]


def test_a_sink_id_reused_with_a_new_checkpoint_is_refused(spark: Any, address: str,
                                                          tmp_path: Path) -> None:
    journal = f"{P}/reused"
    first = input_files(tmp_path / "in", 1, 3)
    drain(spark, address, tmp_path / "in", tmp_path / "checkpoint", journal, "reused")
    assert numbers(address, journal) == first
    # A new checkpoint numbers its micro-batches from 0 again, as the first query did.
    with pytest.raises(Exception) as failure:
        drain(spark, address, tmp_path / "in", tmp_path / "new-checkpoint", journal, "reused")
    assert "option sinkId: 'reused' already records the commits of another query in " \
        f"journal {journal}" in str(spark_failure(failure.value))  # type: ignore[arg-type]
    assert numbers(address, journal) == first
