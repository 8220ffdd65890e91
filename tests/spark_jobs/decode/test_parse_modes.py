"""Blocks decoded under each parse mode, Spark's coercions value by value, and publish times
from UUID clocks, without Spark (the end-to-end reads are in tests/spark_jobs/source/
test_schemas.py)."""

from __future__ import annotations

import datetime
import decimal
import math
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql.types import (
    DateType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from gazette_core.errors import ValidationError
from gazette_core.message.reader import MessageDecodeError
from gazette_core.message.uuid import build_uuid, get_clock
from spark_jobs.decode.arrow_frames import output_schema
from spark_jobs.decode.content import CSV, JSON
from spark_jobs.decode.csv_blocks import decode_csv_block
from spark_jobs.decode.json_blocks import Block, decode_block
from spark_jobs.decode.spark_values import Misfit, convert, loads
from spark_jobs.decode.uuid_columns import publish_times

U = "3a4f0c2e-5b6a-11ee-8000-0a0100000001"
NIL = "00000000-0000-0000-0000-000000000000"
DOCS = StructType([StructField("offset", LongType()), StructField("n", LongType()),
                   StructField("d", DateType()), StructField("m", MapType(StringType(),
                                                                          LongType())),
                   StructField("_corrupt_record", StringType())])
LINES = [f'{{"uuid":"{U}","n":1,"d":"2024-01-02","m":{{"k":2}}}}', '{"n":"x","d":"2024-1-2"}',
         "not json"]
DATA = "".join(line + "\n" for line in LINES).encode()


def test_permissive_keeps_what_fits_and_the_text_of_what_does_not() -> None:
    decoded = decode_block("a/b", Block(10, DATA), output_schema(JSON, DOCS, "PERMISSIVE"))
    assert decoded.batch.to_pylist() == [
        {"offset": 10, "n": 1, "d": datetime.date(2024, 1, 2), "m": [("k", 2)],
         "_corrupt_record": None},
        {"offset": 10 + len(LINES[0]) + 1, "n": None, "d": None, "m": None,
         "_corrupt_record": LINES[1]},
        {"offset": 10 + len(LINES[0]) + len(LINES[1]) + 2, "n": None, "d": None, "m": None,
         "_corrupt_record": LINES[2]}]
    assert decoded.ids.clock.tolist()[1:] == [0, 0]


def test_dropmalformed_leaves_the_records_out_of_the_block() -> None:
    decoded = decode_block("a/b", Block(10, DATA), output_schema(JSON, DOCS, "DROPMALFORMED"))
    assert decoded.offsets.tolist() == [10]
    assert decoded.batch.column("n").to_pylist() == [1]


def test_failfast_names_the_journal_offset_column_and_value() -> None:
    with pytest.raises(ValidationError, match=(
            f'a/b offset {11 + len(LINES[0])}: the document does not fit the schema: column '
            'n: the string "x" does not fit BIGINT')):
        decode_block("a/b", Block(10, DATA), output_schema(JSON, DOCS, "FAILFAST"))
    with pytest.raises(MessageDecodeError, match="a/b offset 0: cannot decode message"):
        decode_block("a/b", Block(0, b"not json\n"), output_schema(JSON, DOCS, "FAILFAST"))


def test_csv_rows_of_several_widths_follow_the_mode_in_bulk() -> None:
    schema = StructType([StructField("n", LongType()), StructField("s", StringType()),
                         StructField("_corrupt_record", StringType())])
    data = f"{NIL},1,a\n{NIL},x\n{NIL}\n".encode()
    decoded = decode_csv_block("a/b", Block(0, data), output_schema(CSV, schema, "PERMISSIVE"))
    assert decoded is not None
    assert decoded.batch.to_pylist() == [
        {"n": 1, "s": "a", "_corrupt_record": None},
        {"n": None, "s": None, "_corrupt_record": f"{NIL},x"},
        {"n": None, "s": None, "_corrupt_record": None}]
    dropped = decode_csv_block("a/b", Block(0, data),
                               output_schema(CSV, schema, "DROPMALFORMED"))
    assert dropped is not None and dropped.offsets.tolist() == [0, len(data) - 37]


@pytest.mark.parametrize(("value", "kind", "expected"), [
    ("5", pa.string(), "5"), ("1.50", pa.string(), "1.50"), ("true", pa.string(), "true"),
    ('{"k": [1, 2]}', pa.string(), '{"k":[1,2]}'), ("3", pa.float64(), 3.0),
    ('"-Infinity"', pa.float64(), -math.inf), ('"12.345"', pa.decimal128(5, 2),
                                               decimal.Decimal("12.35")),
    ("1700000000", pa.timestamp("us", tz="UTC"),
     datetime.datetime(2023, 11, 14, 22, 13, 20, tzinfo=datetime.UTC)),
    ('"2024-01-02T03:04:05"', pa.timestamp("us"), datetime.datetime(2024, 1, 2, 3, 4, 5)),
    ('"aGk="', pa.binary(), b"hi"), ('[1, null]', pa.list_(pa.int8()), [1, None]),
])
def test_values_are_coerced_as_sparks_json_reader_coerces(value: str, kind: pa.DataType,
                                                          expected: Any) -> None:
    assert convert(loads(value), kind) == expected


@pytest.mark.parametrize(("value", "kind"), [
    ('"1"', pa.int64()), ("1.5", pa.int64()), ("128", pa.int8()), ('"true"', pa.bool_()),
    ('"x"', pa.float64()), ("1", pa.date32()), ('"2024-1-2"', pa.date32()),
    ('"not base64!"', pa.binary()), ("123.4", pa.decimal128(3, 1)), ("[1]", pa.int64()),
])
def test_values_spark_does_not_coerce_are_misfits(value: str, kind: pa.DataType) -> None:
    with pytest.raises(Misfit):
        convert(loads(value), kind)


def test_publish_times_are_the_uuid_clocks_and_null_without_one() -> None:
    when = datetime.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=datetime.UTC)
    ns = int(when.timestamp()) * 10**9 + when.microsecond * 1000
    clock = ((ns // 100) + 122192928000000000) << 4 | 3
    u = build_uuid(bytes(6), clock, 0)
    times = publish_times(np.array([get_clock(u), 0], dtype=np.uint64))
    assert times.to_pylist() == [when, None]
    assert output_schema(JSON, StructType([StructField("timestamp", TimestampType())])
                         ).field("timestamp").type == times.type
