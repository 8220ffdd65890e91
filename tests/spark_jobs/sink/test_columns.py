"""The sink's column-by-column JSON records read back as the row-by-row encoder's do, and
batches it cannot encode are left to the row-by-row encoder."""

from __future__ import annotations

import datetime
import json
import random

import pyarrow as pa
import pytest

from spark_jobs.decode.content import JSON
from spark_jobs.sink.columns import json_records
from spark_jobs.sink.encode import encode_row, stamp

U = "00000000-0000-1000-8001-010203040506"


def row_by_row(batch: pa.RecordBatch, columns: tuple[str, ...]) -> list[bytes]:
    rows = batch.select(list(columns)).to_pylist()
    return [stamp(JSON, U, encode_row(JSON, row)) for row in rows]


def test_flat_columns_read_back_as_the_row_encoder_writes_them() -> None:
    rng = random.Random(3)
    texts = ['plain', 'quote " and \\ back', 'lines\nand\ttabs\r', 'ünïcödé ✓', '', None]
    n = 300
    batch = pa.RecordBatch.from_pydict({
        "i": [rng.choice([None, 0, -1, 2**62, rng.randint(-10**9, 10**9)]) for _ in range(n)],
        "f": [rng.choice([None, 0.1, -2.5e-300, 1e300, rng.random()]) for _ in range(n)],
        "b": [rng.choice([None, True, False]) for _ in range(n)],
        "s": [rng.choice(texts) for _ in range(n)],
        "journal": ["not/written"] * n,
    })
    columns = ("i", "f", "b", "s")
    records = json_records(batch, columns, [U] * n)
    assert records is not None
    fast = records.to_pylist()
    slow = row_by_row(batch, columns)
    assert [json.loads(r) for r in fast] == [json.loads(r) for r in slow]
    assert all(r.startswith(b'{"uuid":"' + U.encode() + b'",') and r.endswith(b"}\n")
               for r in fast)


@pytest.mark.parametrize("column", [
    pa.array([1.0, float("nan")]),
    pa.array(["fine", "bell \x07"]),
    pa.array([[1], [2]]),
    pa.array([datetime.date(2026, 1, 1), None]),
])
def test_columns_it_cannot_encode_leave_the_batch_to_the_row_encoder(column: pa.Array) -> None:
    batch = pa.RecordBatch.from_arrays([column], names=["c"])
    assert json_records(batch, ("c",), [U, U]) is None
