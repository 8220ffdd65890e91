"""`df.write.format("gazette")`, the exactly-once sink, against a real stack and local Spark.

Rows are read back with read_committed(), as consumers see them: each row
once, nothing before the job commits, nothing of a failed task attempt or an
aborted job. One stack and one Spark session (local[2,2]: two cores, a
failed task is tried again once) serve the module.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gazette_core.message.mapping import fnv1a32
from spark_jobs.frame_export import spark_failure
from tests.spark_jobs.cluster_support import Cluster, cluster  # noqa: F401  (fixture)
from tests.spark_jobs.sink.sink_support import (
    CSV_TYPE,
    JSON_TYPE,
    committed,
    records,
    rolled_back,
    sink_session,
    sink_stack,
    wait_for,
    write_head,
)

P = "sink"
FAIL_AT = 12
# A typed UDF is fine as a plain one: Spark need not guess an eval type from its hints.
pytestmark = pytest.mark.filterwarnings("ignore:Cannot infer the eval type")
PAD = 16 << 10
JOURNALS = {"json": JSON_TYPE, "csv": CSV_TYPE, "col-a": JSON_TYPE, "col-b": CSV_TYPE,
            "part-0": JSON_TYPE, "part-1": JSON_TYPE, "part-2": JSON_TYPE, "gated": JSON_TYPE,
            "retried": JSON_TYPE, "aborted": JSON_TYPE, "raw": "", "bad": JSON_TYPE,
            "cluster": CSV_TYPE, "value-json": JSON_TYPE, "value-csv": CSV_TYPE,
            "defaulted": JSON_TYPE, "copied": JSON_TYPE, "killed": JSON_TYPE}


@pytest.fixture(scope="module")
def address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with sink_stack(tmp_path_factory, P, JOURNALS) as address:
        yield address


@pytest.fixture(scope="module")
def spark(address: str) -> Any:
    return sink_session("local[2,2]", "sink-test")


def write(df: Any, address: str, mode: str = "append", **options: str) -> None:
    df.write.format("gazette").mode(mode).option("broker", address).options(**options).save()


def test_batch_write_is_read_back_once_as_json_and_csv(spark: Any, address: str) -> None:
    rows = [(i, f"text, \"{i}\"\nline", i % 2 == 0) for i in range(40)]
    df = spark.createDataFrame(rows, "n LONG, text STRING, even BOOLEAN").repartition(3)
    write(df, address, journal=f"{P}/json")
    df.write.format("gazette").mode("append").option("broker", address).save(f"{P}/csv")
    docs = committed(address, f"{P}/json")
    assert sorted(docs, key=lambda d: d["n"]) == [
        {"n": n, "text": t, "even": e} for n, t, e in rows]
    fields = committed(address, f"{P}/csv")
    assert sorted(fields, key=lambda f: int(f[0])) == [
        [str(n), t, "true" if e else "false"] for n, t, e in rows]


def test_rows_go_to_the_journal_their_column_names(spark: Any, address: str) -> None:
    rows = [(f"{P}/col-a" if i % 3 else f"{P}/col-b", i, f"v{i}") for i in range(30)]
    df = spark.createDataFrame(rows, "journal STRING, n LONG, v STRING").repartition(2)
    write(df, address)
    assert sorted(committed(address, f"{P}/col-a"), key=lambda d: d["n"]) == [
        {"n": n, "v": v} for j, n, v in rows if j.endswith("col-a")]
    assert sorted(committed(address, f"{P}/col-b"), key=lambda f: int(f[0])) == [
        [str(n), v] for j, n, v in rows if j.endswith("col-b")]


def test_rows_go_to_the_partition_their_key_maps_to(spark: Any, address: str) -> None:
    rows = [(f"user-{i % 7}", i) for i in range(42)]
    df = spark.createDataFrame(rows, "user STRING, n LONG").repartition(3)
    write(df, address, partitions=f"sink={P},name:prefix={P}/part-", keyColumn="user")
    expected: dict[str, list[dict[str, Any]]] = {f"{P}/part-{i}": [] for i in range(3)}
    for user, n in rows:  # publishers' modulo mapping over the partitions sorted by name
        expected[f"{P}/part-{fnv1a32(user) % 3}"].append({"user": user, "n": n})
    for journal, docs in expected.items():
        assert sorted(committed(address, journal), key=lambda d: d["n"]) == docs


def _gated(spark: Any, rows: int, partitions: int, gate_path: str, mode: str) -> Any:
    """`rows` numbers through a UDF that waits for the test to create `gate_path`: at the
    first row of partition 1 ("wait"); then fails ("fail"); or at row FAIL_AT of the first
    attempt and then fails ("fail-first") or kills the sink's worker process, which cannot
    roll itself back ("kill-first")."""
    from pyspark.sql.functions import udf

    def number(n: int) -> tuple[int, str]:
        from pyspark import TaskContext

        from tests.spark_jobs.sink.sink_support import gate

        context = TaskContext.get()
        assert context is not None
        if mode in ("fail-first", "kill-first"):
            if n == FAIL_AT and context.attemptNumber() == 0:
                gate(gate_path)
                if mode == "kill-first":
                    from tests.spark_jobs.sink.sink_support import kill_clients_of

                    assert kill_clients_of(int(Path(gate_path).read_text()))
                raise RuntimeError("the first attempt fails after publishing")
        elif context.partitionId() == 1:
            gate(gate_path)
            if mode == "fail":
                raise RuntimeError("partition 1 always fails")
        # Python workers send results in 64 KiB buffers: large rows get there before the gate.
        return n, "x" * (PAD if mode.endswith("-first") else 0)

    return spark.range(0, rows, numPartitions=partitions).select(
        udf(number, "n LONG, pad STRING", useArrow=False)("id").alias("r")).select("r.n", "r.pad")


def open_gate_after_rows(address: str, journal: str, gate_path: str, content: str = ""
                         ) -> tuple[threading.Thread, list[list[Any]]]:
    """A thread that waits for rows in `journal`, reads it committed, then opens the gate.

    The Spark job runs in the test's own thread (where its session is active).
    """
    seen: list[list[Any]] = []

    def run() -> None:
        try:
            wait_for(lambda: write_head(address, journal) > 0, f"rows in {journal}")
            seen.append(committed(address, journal))
        finally:
            Path(gate_path).write_text(content)

    watcher = threading.Thread(target=run)
    watcher.start()
    return watcher, seen


def test_nothing_is_visible_before_the_job_commits(spark: Any, address: str,
                                                    tmp_path: Path) -> None:
    journal, gate_path = f"{P}/gated", str(tmp_path / "gate")
    watcher, seen = open_gate_after_rows(address, journal, gate_path)
    try:
        write(_gated(spark, 20, 2, gate_path, "wait"), address, journal=journal)
    finally:
        watcher.join()
    assert seen == [[]]  # rows published, none committed
    assert sorted(d["n"] for d in committed(address, journal)) == list(range(20))


def test_a_failed_task_attempt_leaves_no_duplicate(spark: Any, address: str,
                                                   tmp_path: Path) -> None:
    journal, gate_path = f"{P}/retried", str(tmp_path / "gate")
    # Small batches, so rows before FAIL_AT reach the sink before the UDF stops there.
    small = ("spark.sql.execution.arrow.maxRecordsPerBatch",
             "spark.sql.execution.python.udf.maxRecordsPerBatch")
    for key in small:
        spark.conf.set(key, "2")
    watcher, seen = open_gate_after_rows(address, journal, gate_path)
    try:
        write(_gated(spark, 20, 1, gate_path, "fail-first"), address, journal=journal,
              appendBytes="1")
    finally:
        watcher.join()
        for key in small:
            spark.conf.unset(key)
    assert seen == [[]]
    assert sorted(d["n"] for d in committed(address, journal)) == list(range(20))
    # The first attempt's rows are in the journal, never committed.
    assert len(records(address, journal)) > 20 + 1


def test_the_rows_of_an_attempt_that_died_are_rolled_back_at_commit(
        spark: Any, address: str, tmp_path: Path) -> None:
    journal, gate_path = f"{P}/killed", tmp_path / "gate"
    small = ("spark.sql.execution.arrow.maxRecordsPerBatch",
             "spark.sql.execution.python.udf.maxRecordsPerBatch")
    for key in small:
        spark.conf.set(key, "2")
    watcher, _ = open_gate_after_rows(address, journal, str(gate_path),
                                      content=address.rsplit(":", 1)[1])
    try:
        write(_gated(spark, 20, 1, str(gate_path), "kill-first"), address, journal=journal,
              appendBytes="1")
    finally:
        watcher.join()
        for key in small:
            spark.conf.unset(key)
    assert sorted(d["n"] for d in committed(address, journal)) == list(range(20))
    # The killed attempt's producer is rolled back by the job's commit, not left pending.
    producers = rolled_back(records(address, journal))
    assert len(producers) == 2 and sorted(producers.values()) == [False, True]


def test_an_aborted_job_leaves_nothing_visible(spark: Any, address: str, tmp_path: Path) -> None:
    journal, gate_path = f"{P}/aborted", str(tmp_path / "gate")
    watcher, _ = open_gate_after_rows(address, journal, gate_path)
    try:
        with pytest.raises(Exception, match="partition 1 always fails"):
            write(_gated(spark, 20, 2, gate_path, "fail"), address, journal=journal)
    finally:
        watcher.join()
    assert committed(address, journal) == []
    # abort() rolled partition 0's producer back: an ACK below its first clock follows it.
    producers = rolled_back(records(address, journal))
    assert producers and all(producers.values())


@pytest.mark.parametrize(("options", "columns", "error"), [
    ({"journal": f"{P}/json", "colour": "red"}, "n LONG",
     "option colour: unknown option (a write takes: journal, path, partitions"),
    ({"journal": f"{P}/missing"}, "n LONG",
     f"option journal: journal '{P}/missing' does not exist"),
    ({"journal": f"{P}/raw"}, "n LONG", f"journal {P}/raw: has no content-type label"),
    ({}, "n LONG", "option journal: say where rows go"),
    ({"partitions": f"sink={P}"}, "n LONG", "option keyColumn: writing to partitions needs"),
    ({"partitions": f"sink={P}", "keyColumn": "user"}, "n LONG",
     "option keyColumn: no column 'user' in the DataFrame"),
    ({"journal": f"{P}/bad", "path": f"{P}/json"}, "n LONG",
     f"option journal: '{P}/bad' and the save() path '{P}/json' name different journals"),
    ({}, "journal INT, n LONG", "column journal: is integer: it names each row's target"),
    ({}, "journal STRING, offset LONG, uuid STRING, value STRING",
     "rows read from journals (a uuid column) keep their journal column as metadata"),
])
def test_bad_writes_are_one_line_and_write_nothing(
        spark: Any, address: str, options: dict[str, str], columns: str, error: str) -> None:
    df = spark.createDataFrame([], columns)
    with pytest.raises(Exception) as failure:
        write(df, address, **options)
    assert error in spark_error(failure.value)
    assert write_head(address, f"{P}/bad") == 0


def test_the_default_save_mode_appends(spark: Any, address: str) -> None:
    df = spark.createDataFrame([(1,), (2,)], "n LONG")
    df.write.format("gazette").option("broker", address).save(f"{P}/defaulted")
    df.write.format("gazette").option("broker", address).save(f"{P}/defaulted")
    assert sorted(d["n"] for d in committed(address, f"{P}/defaulted")) == [1, 1, 2, 2]


def test_a_value_column_is_the_whole_message(spark: Any, address: str) -> None:
    docs = ['{"n": 1, "tags": ["a"]}', '{"n":2,"uuid":"old","x":{"y":null}}', '{}',
            '{\n "n": 3\n}']
    df = spark.createDataFrame([(d, "routing only") for d in docs], "value STRING, key STRING")
    write(df, address, journal=f"{P}/value-json")
    assert sorted(committed(address, f"{P}/value-json"), key=lambda d: d.get("n", 0)) == [
        {}, {"n": 1, "tags": ["a"]}, {"n": 2, "x": {"y": None}}, {"n": 3}]
    binary = spark.createDataFrame([(b'1,"a, b"',), (b"2,c\n",)], "value BINARY")
    write(binary, address, journal=f"{P}/value-csv")
    assert sorted(committed(address, f"{P}/value-csv")) == [["1", "a, b"], ["2", "c"]]
    bad = spark.createDataFrame([('{"n": 1}',), ("[1, 2]",)], "value STRING").repartition(1)
    with pytest.raises(Exception) as failure:
        write(bad, address, journal=f"{P}/bad")
    assert "column value ('[1, 2]'): is not a JSON object" in spark_error(failure.value)
    assert write_head(address, f"{P}/bad") == 0


def test_rows_read_from_a_journal_copy_to_another(spark: Any, address: str) -> None:
    source = f"{P}/json"
    read = spark.read.format("gazette").option("broker", address).load(f"name={source}")
    write(read, address, journal=f"{P}/copied")
    assert sorted(committed(address, f"{P}/copied"), key=lambda d: d["n"]) == sorted(
        committed(address, source), key=lambda d: d["n"])
    typed = spark.read.format("gazette").option("broker", address).schema(
        "journal STRING, offset LONG, uuid STRING, producer STRING, n LONG").load(f"name={source}")
    write(typed.where("n < 3"), address, journal=f"{P}/copied")
    assert sorted(d["n"] for d in committed(address, f"{P}/copied") if set(d) == {"n"}) == [
        0, 1, 2]


def test_rows_that_cannot_be_written_write_nothing(spark: Any, address: str) -> None:
    df = spark.createDataFrame([(1, 0.5), (2, float("nan"))], "n LONG, x DOUBLE").repartition(1)
    with pytest.raises(Exception) as failure:
        write(df, address, journal=f"{P}/bad")
    assert "column x (nan): cannot be written as a message" in spark_error(failure.value)
    routed = spark.createDataFrame([(f"{P}/bad", 1), (f"{P}/nowhere", 2)], "journal STRING, n LONG")
    with pytest.raises(Exception) as failure:
        write(routed.repartition(1), address)
    assert f"journal '{P}/nowhere' does not exist" in spark_error(failure.value)
    with pytest.raises(Exception) as failure:
        write(spark.createDataFrame([(1,)], "n LONG"), address, journal=f"{P}/bad",
              mode="overwrite")
    assert "journals are append-only" in spark_error(failure.value)
    assert write_head(address, f"{P}/bad") == 0


def test_a_write_runs_on_a_standalone_cluster(address: str,
                                              cluster: Cluster) -> None:  # noqa: F811
    """Last in the module: the session moves from local mode to the cluster's master."""
    spark = sink_session(cluster.master, "sink-cluster-test")
    rows = [(i, f"row {i}") for i in range(30)]
    write(spark.createDataFrame(rows, "n LONG, text STRING").repartition(3), address,
          journal=f"{P}/cluster")
    assert sorted(committed(address, f"{P}/cluster"), key=lambda f: int(f[0])) == [
        [str(n), t] for n, t in rows]


def spark_error(exc: BaseException) -> str:
    """The line gazctl shows of a failed Spark job (our error's own message)."""
    line = str(spark_failure(exc))  # type: ignore[arg-type]
    print(line)
    return line
