"""A batch read's offsets checked at planning, against a real stack on real Spark: an offset
inside a record refused naming the nearest records, content pruned between the offsets
refused (failOnDataLoss) or skipped; what a user's exception says of a refused read;
`load("journal/name")`.

One stack (file stores) and one Spark session serve the module.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gazette_core.broker.client.appender import append
from gazette_core.broker.client.channel import close_channels, journal_stub
from gazette_core.local.stack import Stack
from gazette_core.message.uuid import Flags
from spark_jobs.job_errors import failure_line
from spark_jobs.session import get_session
from tests.gazctl.committed_support import csv_record
from tests.gazctl.support import ok
from tests.spark_jobs.frames_support import spark_stack
from tests.spark_jobs.source.batch_support import (
    SCENARIO,
    F,
    append_scenario,
    apply_journals,
    committed,
    persisted_but_spool,
    uuid_of,
    wait_for,
)
from tests.spark_jobs.source.stream_support import wait_listed_without

P = "offsets"
JSON_J, CSV_J, PRUNED_J = f"{P}/json", f"{P}/csv", f"{P}/pruned"
BAD = "gazette_core.errors.ValidationError: "
# A CSV record whose text holds a newline inside quotes: not where a record starts.
QUOTED = csv_record(bytes([0x0A, 9, 0, 0, 0, 9]), 1, Flags.OUTSIDE_TXN, "99", "two\nlines")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with spark_stack(tmp_path_factory, "offsets-stack") as stack:
        yield stack


@pytest.fixture(scope="module")
def address(stack: Stack) -> str:
    return stack.brokers[0].endpoint


@pytest.fixture(scope="module")
def spans(stack: Stack, address: str) -> dict[str, list[tuple[int, int]]]:
    """The journals, filled and persisted but their spools; each append's span."""
    apply_journals(address, P, [("json", "application/x-ndjson", "file:///"),
                                ("csv", "text/csv", "file:///"),
                                ("pruned", "application/x-ndjson", "file:///")])
    out = {JSON_J: append_scenario(address, JSON_J, "json"),
           PRUNED_J: append_scenario(address, PRUNED_J, "json")}
    out[CSV_J] = [_append(address, CSV_J, QUOTED + QUOTED + b"p" * 1100 + b"\n")]
    for journal in out:
        wait_for(f"{journal} persisted", lambda j=journal: persisted_but_spool(address, j))
    return out


def _append(address: str, journal: str, data: bytes) -> tuple[int, int]:
    async def run() -> tuple[int, int]:
        try:
            resp = await append(journal_stub(address), journal, data)
            return resp.commit.begin, resp.commit.end
        finally:
            await close_channels()

    import asyncio
    return asyncio.run(run())


@pytest.fixture(scope="module")
def spark(stack: Stack) -> Any:
    return get_session("local[2]", "batch-offsets-test")


def root(stack: Stack) -> str:
    return str(stack.directory / "fragments")


def reader(spark: Any, stack: Stack, address: str, journal: str | None, **options: Any) -> Any:
    r = spark.read.format("gazette").option("broker", address).option("fileRoot", root(stack))
    if journal is not None:
        r = r.option("selector", f"name={journal}")
    for name, value in options.items():
        r = r.option(name, value if isinstance(value, str) else json.dumps(value))
    return r


def refused(df_of: Any) -> BaseException:
    with pytest.raises(Exception) as failed:
        df_of().collect()
    return failed.value


def offsets_and_uuids(df: Any) -> list[tuple[int, str | None]]:
    return sorted((row.offset, row.uuid) for row in df.select("offset", "uuid").collect())


def record_starts(address: str, journal: str) -> list[int]:
    """Where each line starts, from the journal's bytes (JSON lines: every newline ends one)."""
    data = ok("journals", "read", "-l", f"name={journal}", "--broker.address",
              address).stdout_bytes
    return [0] + [i + 1 for i, byte in enumerate(data) if byte == 10]


def test_an_offset_inside_a_record_is_refused_at_planning_naming_the_nearest(
        spark: Any, stack: Stack, address: str,
        spans: dict[str, list[tuple[int, int]]]) -> None:
    starts = record_starts(address, JSON_J)
    inside = spans[JSON_J][1][0] + 5
    before, after = max(s for s in starts if s <= inside), min(s for s in starts if s > inside)
    csv_begin = spans[CSV_J][0][0]
    in_quotes = csv_begin + QUOTED.index(b"\n") + 1  # After a newline, inside quotes.

    starting = refused(lambda: reader(spark, stack, address, JSON_J,
                                      startingOffsets={JSON_J: inside}).load())
    ending = refused(lambda: reader(spark, stack, address, JSON_J,
                                    endingOffsets={JSON_J: inside}).load())
    quoted = refused(lambda: reader(spark, stack, address, CSV_J,
                                    startingOffsets={CSV_J: in_quotes}).load())

    tail = f"offset {inside} of journal {JSON_J} is not where a record starts; the " \
           f"nearest records start at {before} and {after}"
    assert failure_line(starting) == f"{BAD}option startingOffsets: {tail}"
    assert failure_line(ending) == f"{BAD}option endingOffsets: {tail}"
    assert failure_line(quoted) == (
        f"{BAD}option startingOffsets: offset {in_quotes} of journal {CSV_J} is not where a "
        f"record starts; the nearest records start at {csv_begin} and "
        f"{csv_begin + len(QUOTED)}")
    assert "Python worker" not in str(starting)  # Refused by the driver, not by a task.


def test_a_streaming_query_starting_inside_a_record_is_refused_at_its_start(
        spark: Any, stack: Stack, address: str, spans: dict[str, list[tuple[int, int]]],
        tmp_path: Path) -> None:
    starts = record_starts(address, JSON_J)
    inside = spans[JSON_J][2][0] + 3
    before, after = max(s for s in starts if s <= inside), min(s for s in starts if s > inside)
    df = (spark.readStream.format("gazette").option("broker", address)
          .option("fileRoot", root(stack)).option("selector", f"name={JSON_J}")
          .option("startingOffsets", json.dumps({JSON_J: inside})).load())

    with pytest.raises(Exception) as failed:
        (df.writeStream.format("noop").option("checkpointLocation", str(tmp_path))
         .trigger(availableNow=True).start().awaitTermination())

    assert failure_line(failed.value) == (
        f"{BAD}option startingOffsets: offset {inside} of journal {JSON_J} is not where a "
        f"record starts; the nearest records start at {before} and {after}")


def test_an_offset_at_a_record_inside_a_fragment_reads_from_that_record(
        spark: Any, stack: Stack, address: str,
        spans: dict[str, list[tuple[int, int]]]) -> None:
    begin, end = spans[JSON_J][1]
    second = min(s for s in record_starts(address, JSON_J) if begin < s < end)

    df = reader(spark, stack, address, JSON_J, startingOffsets={JSON_J: second},
                splitBytes="1").load()

    assert offsets_and_uuids(df) == sorted(committed(address, JSON_J, "json", second))


def prune(stack: Stack, address: str, journal: str, span: tuple[int, int]) -> None:
    """Delete the fragment file of `span`, as a prune would, until the broker lists it no more."""
    directory = Path(root(stack)) / journal
    for path in directory.iterdir():
        if int(path.name[:16], 16) == span[0]:
            path.unlink()
    wait_listed_without(address, journal, span[0])


@pytest.fixture(scope="module")
def pruned(spark: Any, stack: Stack, address: str,
           spans: dict[str, list[tuple[int, int]]]) -> list[tuple[int, str | None]]:
    """The pruned journal's first and third appends pruned; what a read gave before."""
    s = spans[PRUNED_J]
    before = offsets_and_uuids(reader(spark, stack, address, PRUNED_J).load())
    prune(stack, address, PRUNED_J, s[0])
    prune(stack, address, PRUNED_J, s[2])
    return before


LOST = " were removed from the stores"


def test_content_pruned_between_the_offsets_fails_the_read_unless_fail_on_data_loss_false(
        spark: Any, stack: Stack, address: str, spans: dict[str, list[tuple[int, int]]],
        pruned: list[tuple[int, str | None]]) -> None:
    s = spans[PRUNED_J]

    hole = refused(lambda: reader(spark, stack, address, PRUNED_J).load())
    head = refused(lambda: reader(spark, stack, address, PRUNED_J,
                                  startingOffsets={PRUNED_J: 0}).load())
    clear = reader(spark, stack, address, PRUNED_J, endingOffsets={PRUNED_J: s[1][1]}).load()
    remaining = offsets_and_uuids(reader(spark, stack, address, PRUNED_J,
                                         failOnDataLoss="false").load())

    lost = f"spark_jobs.source.offset_checks.LostContent: journal {PRUNED_J}: offsets "
    advice = f"{LOST} (failOnDataLoss is true; set it to false to read what remains)"
    assert failure_line(hole) == f"{lost}[{s[2][0]}, {s[2][1]}){advice}"
    assert failure_line(head) == f"{lost}[0, {s[1][0]}){advice}"
    assert clear.count() > 0  # Offsets clear of the hole read as before.
    # What remains: none of the pruned content, every filler message of an append left in
    # place, as read before the prune.
    assert not any(b <= o < e for o, _ in remaining for b, e in (s[0], s[2]))
    kept = [i for i in range(len(SCENARIO)) if i not in (0, 2)]
    fillers = {uuid_of((F, i + 1, Flags.OUTSIDE_TXN)) for i in kept}
    assert {r for r in pruned if r[1] in fillers} <= set(remaining)
    assert len(fillers) == len(kept) == 4


def test_a_failed_streaming_query_shows_our_line_first_without_a_traceback(
        spark: Any, stack: Stack, address: str, spans: dict[str, list[tuple[int, int]]],
        pruned: list[tuple[int, str | None]], tmp_path: Path) -> None:
    df = (spark.readStream.format("gazette").option("broker", address)
          .option("fileRoot", root(stack)).option("selector", f"name={PRUNED_J}")
          .option("startingOffsets", json.dumps({PRUNED_J: 0})).load())

    with pytest.raises(Exception) as failed:
        (df.writeStream.format("noop").option("checkpointLocation", str(tmp_path))
         .trigger(availableNow=True).start().awaitTermination())

    first = str(failed.value).splitlines()[0]
    assert f"DataLoss: journal {PRUNED_J}: offsets [0, {spans[PRUNED_J][1][0]}){LOST}" in first
    assert "Traceback" not in str(failed.value)


def test_a_users_exception_for_a_refused_read_shows_our_line_first(
        spark: Any, stack: Stack, address: str,
        spans: dict[str, list[tuple[int, int]]]) -> None:
    exc = refused(lambda: reader(spark, stack, address, JSON_J, startingOffset="earliest")
                  .load())

    first = str(exc).splitlines()[0]
    assert (f"{BAD}option startingOffset: unknown option; did you mean startingOffsets?"
            in first), str(exc)
    assert len(str(exc).splitlines()) <= 2  # Spark's SQLSTATE may follow; no traceback.


def test_load_of_a_journal_name_reads_that_journal(
        spark: Any, stack: Stack, address: str,
        spans: dict[str, list[tuple[int, int]]]) -> None:
    df = reader(spark, stack, address, None).load(JSON_J)

    assert offsets_and_uuids(df) == sorted(committed(address, JSON_J, "json"))
