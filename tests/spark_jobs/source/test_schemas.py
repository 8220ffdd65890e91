"""Schemas as Spark's JSON reader takes them, on real Spark and a real stack: every Spark SQL
type the sink writes reads back the same; parse modes, the corrupt-record column and
coercions; duplicate columns refused at planning; failures naming journal and offset; the
`timestamp` column of each message's publish time.

One stack and one Spark session (local mode) serve the module.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Iterator
from typing import Any

import pytest

from spark_jobs.job_errors import failure_line
from tests.gazctl.support import ok
from tests.spark_jobs.sink.sink_support import CSV_TYPE, JSON_TYPE, sink_session, sink_stack

P = "schemas"
TYPES = f"{P}/types"
MIXED = f"{P}/mixed"
MISFITS = f"{P}/misfits"
CSV_J = f"{P}/csv"
NIL = "00000000-0000-0000-0000-000000000000"  # a CSV row's UUID field, for none
CSV_LINES = [f"{NIL},1,a", f"{NIL},x,b", f"{NIL},3,c"]
EVERY_TYPE = ("b BOOLEAN, y TINYINT, sh SMALLINT, i INT, l BIGINT, f FLOAT, d DOUBLE, "
              "dc DECIMAL(10,2), s STRING, bi BINARY, dt DATE, ts TIMESTAMP, "
              "ntz TIMESTAMP_NTZ, a ARRAY<INT>, m MAP<STRING,INT>, "
              "st STRUCT<x: INT, inner: STRUCT<dt: DATE, bi: BINARY>>")
# Lines of MIXED, appended as they are: offsets are their sums of lengths.
LINES = [
    '{"n": 1, "s": "one", "d": 2}',
    '{"n": "x", "s": 5, "d": 1.5}',
    "not json",
    '{"n": 1.5, "s": {"k": 1}, "d": "NaN"}',
    '{"n": 3, "s": true, "d": 3}',
]


# Values Arrow refused without naming a row, with the column each is read into and the
# detail of the one-line failure.
MISFIT_LINES = [
    ('{"v": 1.5}', "v BIGINT", "column v: the number 1.5 does not fit BIGINT"),
    ('{"v": 300}', "v TINYINT", "column v: the number 300 is out of TINYINT's range"),
    ('{"v": 9223372036854775808}', "v BIGINT",
     "column v: the number 9223372036854775808 is out of BIGINT's range"),
    ('{"v": 123.456}', "v DECIMAL(4,2)", "column v: the number 123.456 does not fit "
     "DECIMAL(4,2)"),
    ('{"v": "abc"}', "v DECIMAL(4,2)", 'column v: the string "abc" does not fit DECIMAL(4,2)'),
    ('{"v": {"k": "z"}}', "v MAP<STRING,INT>", 'column v: the string "z" does not fit INT'),
    ('{"v": "nope"}', "v TIMESTAMP", 'column v: the string "nope" does not fit TIMESTAMP'),
]


def offset_of(index: int, lines: list[str] = LINES) -> int:
    return sum(len(line) + 1 for line in lines[:index])


@pytest.fixture(scope="module")
def address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    journals = {"types": JSON_TYPE, "mixed": JSON_TYPE, "misfits": JSON_TYPE, "csv": CSV_TYPE}
    with sink_stack(tmp_path_factory, P, journals) as address:
        ok("journals", "append", "-l", f"name={MIXED}", "--broker.address", address,
           input="".join(line + "\n" for line in LINES).encode())
        ok("journals", "append", "-l", f"name={MISFITS}", "--broker.address", address,
           input="".join(line + "\n" for line, _, _ in MISFIT_LINES).encode())
        ok("journals", "append", "-l", f"name={CSV_J}", "--broker.address", address,
           input="".join(line + "\n" for line in CSV_LINES).encode())
        yield address


@pytest.fixture(scope="module")
def spark(address: str) -> Any:
    return sink_session("local[1]", "schemas-test")


def read(spark: Any, address: str, journal: str, schema: str | None = None,
         **options: str) -> Any:
    reader = spark.read.format("gazette").option("broker", address).option(
        "selector", f"name={journal}").options(**options)
    return (reader.schema(schema) if schema else reader).load()


def refusal(df: Any) -> str:
    with pytest.raises(Exception) as failed:
        df.collect()
    return failure_line(failed.value)


def test_every_spark_sql_type_written_reads_back_with_the_same_schema(
        spark: Any, address: str) -> None:
    row = (True, 7, 300, 70000, 1 << 40, 1.5, 2.25, decimal.Decimal("12.34"), "text",
           bytearray(b"\x00bytes\xff"), datetime.date(2024, 2, 29),
           datetime.datetime(2024, 1, 2, 3, 4, 5, 6),
           datetime.datetime(2024, 1, 2, 3, 4, 5, 7), [1, None, 3], {"k": 1, "z": None},
           (5, (datetime.date(1999, 12, 31), bytearray(b"in"))))
    written = spark.createDataFrame([row], EVERY_TYPE)
    written.write.format("gazette").mode("append").option("broker", address).save(TYPES)

    back = read(spark, address, TYPES, EVERY_TYPE, mode="FAILFAST")

    assert back.schema == written.schema
    assert back.collect() == written.collect()


def test_permissive_is_the_default_nulls_what_does_not_fit_and_keeps_the_text(
        spark: Any, address: str) -> None:
    rows = read(spark, address, MIXED, "offset BIGINT, n BIGINT, s STRING, d DOUBLE, "
                "_corrupt_record STRING").orderBy("offset").collect()

    # As Spark's JSON reader: what fits is kept, a number or object into STRING is its text.
    assert [tuple(r)[1:3] for r in rows] == [
        (1, "one"), (None, "5"), (None, None), (None, '{"k":1}'), (3, "true")]
    assert [r.d for r in rows if r.offset != offset_of(3)] == [2.0, 1.5, None, 3.0]
    assert [r._corrupt_record for r in rows] == [None, LINES[1], LINES[2], LINES[3], None]
    assert rows[3].d != rows[3].d  # "NaN" into DOUBLE is NaN, as Spark's reader has it.


def test_dropmalformed_leaves_out_the_records_that_do_not_fit(spark: Any,
                                                              address: str) -> None:
    df = read(spark, address, MIXED, "n BIGINT, s STRING, bad STRING", mode="dropmalformed",
              columnNameOfCorruptRecord="bad")
    assert sorted(tuple(r) for r in df.collect()) == [(1, "one", None), (3, "true", None)]


def test_csv_fields_that_do_not_cast_follow_the_mode(spark: Any, address: str) -> None:
    schema = "offset BIGINT, n BIGINT, s STRING, _corrupt_record STRING"
    rows = read(spark, address, CSV_J, schema).orderBy("offset").collect()
    assert [tuple(r)[1:] for r in rows] == [(1, "a", None), (None, "b", CSV_LINES[1]),
                                           (3, "c", None)]
    dropped = read(spark, address, CSV_J, schema, mode="DROPMALFORMED").collect()
    assert sorted(r.n for r in dropped) == [1, 3]
    line = refusal(read(spark, address, CSV_J, schema, mode="FAILFAST"))
    assert f"{CSV_J} offset {len(CSV_LINES[0]) + 1}: CSV field 1 ('x') does not fit " in line


def test_failfast_failures_are_one_line_naming_journal_and_offset(spark: Any,
                                                                  address: str) -> None:
    cases = {
        "string into BIGINT": ("n BIGINT", 1, 'column n: the string "x" does not fit BIGINT'),
        "not a document": ("s STRING", 2, "cannot decode message: "),
        "float into BIGINT": ("n BIGINT", 3, "column n: the number 1.5 does not fit BIGINT"),
        "object into INT": ("s INT", 3, "column s: an object does not fit INT"),
        "number into DATE": ("d DATE", 0, "column d: the number 2 does not fit DATE"),
        "number into BINARY": ("d BINARY", 0, "column d: the number 2 does not fit BINARY"),
        "number into MAP": ("s MAP<STRING,INT>", 1,
                            "column s: the number 5 does not fit MAP<STRING,INT>"),
    }
    for name, (schema, index, detail) in cases.items():
        line = refusal(read(spark, address, MIXED, schema, mode="FAILFAST",
                            startingOffsets=f'{{"{MIXED}": {offset_of(index)}}}'))
        assert f"{MIXED} offset {offset_of(index)}: " in line, (name, line)
        assert detail in line and "\n" not in line, (name, line)


def test_values_arrow_refused_without_a_row_name_their_journal_and_offset(
        spark: Any, address: str) -> None:
    lines = [line for line, _, _ in MISFIT_LINES]
    for index, (_, schema, detail) in enumerate(MISFIT_LINES):
        offset = offset_of(index, lines)
        line = refusal(read(spark, address, MISFITS, schema, mode="FAILFAST",
                            startingOffsets=f'{{"{MISFITS}": {offset}}}'))
        assert line == ("gazette_core.errors.ValidationError: schema: "
                        f"{MISFITS} offset {offset}: the document does not fit the schema: "
                        f"{detail} (mode FAILFAST)"), line


def test_a_duplicate_column_is_refused_at_planning_in_one_line(spark: Any,
                                                               address: str) -> None:
    line = refusal(read(spark, address, MIXED, "id BIGINT, id BIGINT"))
    assert line == ("gazette_core.errors.ValidationError: schema column id: named twice; "
                    "each column's name must be unique, whatever its case")
    line = refusal(read(spark, address, MIXED, "id BIGINT, ID STRING"))
    assert line.endswith("schema column ID: named twice (also spelt id); each column's name "
                         "must be unique, whatever its case")
    line = refusal(read(spark, address, MIXED, "n BIGINT", mode="lenient"))
    assert "option mode: 'lenient' is not one of PERMISSIVE, DROPMALFORMED, FAILFAST" in line


def test_the_timestamp_column_is_each_messages_publish_time(spark: Any, address: str) -> None:
    before = datetime.datetime.now(datetime.UTC)
    journal = f"{P}/mixed"
    default = read(spark, address, journal)
    assert default.columns == ["journal", "offset", "uuid", "producer", "timestamp", "value"]
    assert [r.timestamp for r in default.collect()] == [None] * len(LINES)  # no UUIDs

    spark.createDataFrame([(1,)], "n INT").write.format("gazette").mode("append").option(
        "broker", address).save(TYPES)
    rows = read(spark, address, TYPES, "timestamp TIMESTAMP, n INT").where("n = 1").collect()
    after = datetime.datetime.now(datetime.UTC)
    stamp = rows[0].timestamp.replace(tzinfo=datetime.UTC)  # the session's zone is UTC
    assert before - datetime.timedelta(seconds=1) <= stamp <= after
    windows = (read(spark, address, TYPES, "timestamp TIMESTAMP, n INT")
               .withWatermark("timestamp", "1 minute")
               .groupBy("n").count().where("n = 1").collect())
    assert windows[0]["count"] == 1


def test_a_streaming_read_takes_the_mode_and_watermarks_the_timestamp(
        spark: Any, address: str) -> None:
    stream = (spark.readStream.format("gazette").option("broker", address)
              .option("selector", f"name={MIXED}").option("mode", "DROPMALFORMED")
              .schema("timestamp TIMESTAMP, n BIGINT, s STRING").load()
              .withWatermark("timestamp", "1 minute"))
    query = (stream.select("n", "s").writeStream.format("memory").queryName("modes")
             .trigger(availableNow=True).start())
    try:
        assert query.awaitTermination(120)
    finally:
        query.stop()
    assert sorted(tuple(r) for r in spark.table("modes").collect()) == [(1, "one"),
                                                                      (3, "true")]
