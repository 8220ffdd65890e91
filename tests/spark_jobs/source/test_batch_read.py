"""`spark.read.format("gazette")` against a real stack (file and S3 stores) on real Spark: journals
split into ranges read exactly what `read_committed()` reads, whatever the ranges cut through;
offsets options; typed columns; raw bytes; one-line refusals; a standalone cluster.

One stack and one Spark session (local mode) serve the module; the cluster test comes last.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from gazette_core.local.stack import Stack
from gazette_core.message.framing import PROTOBUF_FIXED
from spark_jobs.job_errors import SparkJobFailed, failure_line
from spark_jobs.journals_frame import read_journals
from tests.gazctl.support import ok
from tests.spark_jobs.cluster_support import Cluster, cluster  # noqa: F401 (a fixture)
from tests.spark_jobs.frames_support import fragments, s3_session, s3_stack
from tests.spark_jobs.source.batch_support import (
    COMMITTED,
    SCENARIO,
    append_scenario,
    apply_journals,
    committed,
    persisted_but_spool,
    uuid_of,
    wait_for,
)

P = "batch"
JSON_J, CSV_J, RAW_J, PREFIX_J = f"{P}/json", f"{P}/csv", f"{P}/raw", f"{P}/json-prefix"
KINDS = {JSON_J: "json", CSV_J: "csv"}
MIXED = f"name in ({JSON_J}, {CSV_J}, {RAW_J})"
# A copy of the JSON journal's first three appends: what a read ending there commits.
PREFIX_APPENDS = 3


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with s3_stack(tmp_path_factory, "batch-stack") as stack:
        yield stack


@pytest.fixture(scope="module")
def address(stack: Stack) -> str:
    return stack.brokers[0].endpoint


@pytest.fixture(scope="module")
def spans(stack: Stack, address: str) -> dict[str, list[tuple[int, int]]]:
    """The journals, filled; each append's span, once all but the spools are persisted."""
    assert stack.s3_store is not None
    apply_journals(address, P, [
        ("json", "application/x-ndjson", "file:///"), ("csv", "text/csv", stack.s3_store),
        ("json-prefix", "application/x-ndjson", "file:///"), ("raw", "", stack.s3_store),
        ("proto", PROTOBUF_FIXED, "file:///")])
    out = {journal: append_scenario(address, journal, kind) for journal, kind in KINDS.items()}
    out[PREFIX_J] = append_scenario(address, PREFIX_J, "json", PREFIX_APPENDS)
    for i in range(4):
        ok("journals", "append", "-l", f"name={RAW_J}", "--broker.address", address,
           input=b"".join(f"raw {i}.{n} {'x' * 200}\n".encode() for n in range(6)))
    for journal in (*out, RAW_J):
        wait_for(f"{journal} persisted", lambda j=journal: persisted_but_spool(address, j))
    return out


@pytest.fixture(scope="module")
def spark(stack: Stack) -> Any:
    return s3_session("local[2]", "batch-read-test")


def root(stack: Stack) -> str:
    return str(stack.directory / "fragments")


def read(spark: Any, stack: Stack, address: str, journal: str, schema: str | None = None,
         **options: Any) -> Any:
    reader = spark.read.format("gazette").option("selector", f"name={journal}").option(
        "broker", address).option("fileRoot", root(stack))
    for name, value in options.items():
        reader = reader.option(name, str(value))
    return (reader.schema(schema) if schema else reader).load()


def offsets_and_uuids(df: Any) -> list[tuple[int, str | None]]:
    return sorted((row.offset, row.uuid) for row in df.select("offset", "uuid").collect())


def test_every_append_is_a_fragment_so_tiny_splits_cut_between_appends(
        address: str, spans: dict[str, list[tuple[int, int]]]) -> None:
    for journal in KINDS:
        bounds = {f.begin for f in fragments(address, journal)} | {
            f.end for f in fragments(address, journal)}
        assert {end for _, end in spans[journal]} <= bounds
        assert len(spans[journal]) == len(SCENARIO)


@pytest.mark.parametrize("journal", [JSON_J, CSV_J])
def test_ranges_of_any_size_read_what_read_committed_reads(
        spark: Any, stack: Stack, address: str, spans: dict[str, list[tuple[int, int]]],
        journal: str) -> None:
    expected = sorted(committed(address, journal, KINDS[journal]))

    for split, ring, ranges in ((0, 8192, 1), (1, 1, len(SCENARIO)), (2500, 8192, 3)):
        df = read(spark, stack, address, journal, splitBytes=split, ringSize=ring)
        assert offsets_and_uuids(df) == expected, (split, ring)
        # With splitBytes 1 each fragment is a range: every scenario straddles a boundary.
        assert df.rdd.getNumPartitions() >= ranges
    # Messages without UUIDs are there; duplicates, rolled-back and pending ones are not.
    assert sum(1 for _, u in expected if u is None) == 2
    assert sorted(u for _, u in expected if u) == sorted(uuid_of(r) for r in COMMITTED)


def test_starting_and_ending_offsets_read_from_and_up_to_an_offset(
        spark: Any, stack: Stack, address: str,
        spans: dict[str, list[tuple[int, int]]]) -> None:
    middle = spans[JSON_J][2][0]
    end = spans[JSON_J][PREFIX_APPENDS][0]

    started = read(spark, stack, address, JSON_J, splitBytes=1,
                   startingOffsets=json.dumps({JSON_J: middle}))
    ended = read(spark, stack, address, JSON_J, splitBytes=1,
                 endingOffsets=json.dumps({JSON_J: end}))
    latest = read(spark, stack, address, JSON_J, startingOffsets="latest")
    earliest = read(spark, stack, address, JSON_J, startingOffsets=json.dumps({JSON_J: -2}),
                    endingOffsets=json.dumps({JSON_J: -1}), splitBytes=1)

    assert offsets_and_uuids(started) == sorted(committed(address, JSON_J, "json", middle))
    # The prefix journal holds the same first appends: its committed messages are these.
    assert offsets_and_uuids(ended) == sorted(committed(address, PREFIX_J, "json"))
    assert latest.count() == 0
    assert offsets_and_uuids(earliest) == sorted(committed(address, JSON_J, "json"))


def test_json_and_csv_with_a_schema_give_its_columns_typed(
        spark: Any, stack: Stack, address: str,
        spans: dict[str, list[tuple[int, int]]]) -> None:
    schema = "journal STRING, offset BIGINT, uuid STRING, n BIGINT, text STRING"
    for journal in KINDS:
        expected = committed(address, journal, KINDS[journal])
        by_offset = dict(expected)

        df = read(spark, stack, address, journal, schema=schema, splitBytes=1)

        assert df.columns == ["journal", "offset", "uuid", "n", "text"]
        assert df.rdd.getNumPartitions() >= len(SCENARIO)  # decoded range by range
        assert dict(df.dtypes)["n"] == "bigint"
        rows = sorted(tuple(r) for r in df.collect())
        assert [(j, o, u) for j, o, u, _, _ in rows] == [(journal, o, u) for o, u in
                                                         sorted(expected)]
        # Each message's n and text are the ones appended with it (n counts every record).
        assert all(text in (f"message {n}", "p" * 1000) for *_, n, text in rows)
        assert all(by_offset[o] == u for _, o, u, _, _ in rows)


def test_raw_ranges_concatenate_to_the_journals_bytes(
        spark: Any, stack: Stack, address: str,
        spans: dict[str, list[tuple[int, int]]]) -> None:
    content = ok("journals", "read", "-l", f"name={RAW_J}", "--broker.address",
                 address).stdout_bytes

    df = read(spark, stack, address, RAW_J, splitBytes=1)

    assert df.columns == ["journal", "offset", "data"]
    assert df.rdd.getNumPartitions() >= 4
    rows = sorted((r.offset, bytes(r.data)) for r in df.collect())
    assert b"".join(data for _, data in rows) == content
    offset = 0
    for at, data in rows:  # no overlap, no gap
        assert at == offset
        offset += len(data)


def refusal(spark: Any, stack: Stack, address: str, selector: str | None,
            schema: str | None = None, **options: str) -> str:
    reader = spark.read.format("gazette").option("broker", address).option(
        "fileRoot", root(stack))
    if selector is not None:
        reader = reader.option("selector", selector)
    for name, value in options.items():
        reader = reader.option(name, value)
    with pytest.raises(Exception) as failed:
        (reader.schema(schema) if schema else reader).load().collect()
    return failure_line(failed.value)


def test_bad_input_is_refused_in_one_line(
        spark: Any, stack: Stack, address: str,
        spans: dict[str, list[tuple[int, int]]]) -> None:
    bad = "gazette_core.errors.ValidationError: "
    cases = {
        "unknown option": (f"name={JSON_J}", None, {"startingOffset": "earliest"},
                           bad + "option startingOffset: unknown option; did you mean "
                           "startingOffsets? ("),
        "no selector": (None, None, {},
                        bad + "option selector: a label selector or journal name is required"),
        "nothing matched": ("name=batch/none", None, {},
                            "spark_jobs.selection.NothingMatched: no journals match "
                            "'name=batch/none'"),
        "bad json": (f"name={JSON_J}", None, {"startingOffsets": "{3"},
                     bad + "option startingOffsets: '{3' is not earliest, latest or a JSON "
                     "object"),
        "unknown journal": (f"name={JSON_J}", None, {"endingOffsets": '{"batch/x": 5}'},
                            bad + "option endingOffsets: journal 'batch/x' is not among the "
                            "journals the selector matches"),
        "end before start": (f"name={JSON_J}", None,
                             {"startingOffsets": json.dumps({JSON_J: spans[JSON_J][2][0]}),
                              "endingOffsets": json.dumps({JSON_J: spans[JSON_J][1][0]})},
                             bad + f"option endingOffsets: journal {JSON_J} would end at "
                             f"{spans[JSON_J][1][0]}, before its start at {spans[JSON_J][2][0]}"),
        "metadata type": (f"name={JSON_J}", "offset STRING, n BIGINT", {},
                          bad + "schema column offset: a metadata column; its type is bigint, "
                          "not string"),
        "document misfit": (f"name={JSON_J}", "offset BIGINT, text BIGINT", {"mode": "FAILFAST"},
                            bad + f"schema: {JSON_J} offset "),
        "protobuf": (f"name={P}/proto", None, {},
                     bad + f"option selector: journal {P}/proto holds protobuf messages"),
        "mixed": (MIXED, None, {},
                  bad + f"option selector: the journals do not share one framing: {P}/csv is csv, "
                  f"{P}/json is json, {P}/raw is raw"),
    }
    for name, (selector, schema, options, expected) in cases.items():
        line = refusal(spark, stack, address, selector, schema, **options)
        assert line.startswith(expected), (name, line)


def test_read_journals_refusals_are_one_line_errors(
        spark: Any, stack: Stack, address: str,
        spans: dict[str, list[tuple[int, int]]]) -> None:
    with pytest.raises(SparkJobFailed) as failed:
        read_journals(spark, MIXED, broker=address, file_root=root(stack))

    assert str(failed.value).startswith(
        "gazette_core.errors.ValidationError: option selector: the journals do not share one "
        "framing: ")
    assert "\n" not in str(failed.value)


def test_a_batch_read_runs_on_a_standalone_cluster(
        stack: Stack, address: str, spans: dict[str, list[tuple[int, int]]],
        cluster: Cluster) -> None:  # noqa: F811 (the fixture)
    spark = s3_session(cluster.master, "batch-read-cluster")

    for journal in KINDS:  # CSV is on S3, JSON in files
        df = read(spark, stack, address, journal, splitBytes=2500)
        assert offsets_and_uuids(df) == sorted(committed(address, journal, KINDS[journal]))
