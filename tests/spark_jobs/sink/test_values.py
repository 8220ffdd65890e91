"""A `value` column's text is each whole message: a JSON object with the message's own
UUID first, or the CSV fields after it; anything else is refused naming the value."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from gazette_core.errors import ValidationError
from spark_jobs.decode.content import CSV, JSON
from spark_jobs.sink.route import one
from spark_jobs.sink.values import value_records

U = "00000000-0000-1000-8001-010203040506"


def records(values: list[object], kind: str) -> list[bytes]:
    batch = pa.RecordBatch.from_pydict({"value": values})
    out = value_records(batch, "value", one("j", len(values)), [kind],
                        pa.array([U] * len(values)))
    return out.to_pylist()


def test_json_values_keep_their_text_and_get_the_message_uuid() -> None:
    got = records(['{"b": 1,  "a": [2]}', '{}', b'{"uuid": "old", "n": 1}', '{\n"n":\n2}'],
                  JSON)
    assert got[0] == b'{"uuid":"' + U.encode() + b'","b": 1,  "a": [2]}\n'
    assert got[1] == b'{"uuid":"' + U.encode() + b'"}\n'
    assert [json.loads(r) for r in got[2:]] == [{"uuid": U, "n": 1}, {"uuid": U, "n": 2}]
    assert all(r.count(b"\n") == 1 for r in got)


def test_csv_values_are_the_fields_after_the_uuid() -> None:
    assert records(['1,"a, b"', "2\n", ""], CSV) == [
        U.encode() + b',1,"a, b"\n', U.encode() + b",2\n", U.encode() + b"\n"]


@pytest.mark.parametrize(("value", "kind", "error"), [
    ("[1]", JSON, "column value ('[1]'): is not a JSON object"),
    ("{nope", JSON, "column value ('{nope'): is not a JSON document"),
    (None, JSON, "column value: a row's value is null"),
    ("1\n2", CSV, "column value ('1\\n2'): holds more than one CSV row"),
])
def test_values_that_are_no_message_are_refused(value: object, kind: str, error: str) -> None:
    with pytest.raises(ValidationError) as failure:
        records([value], kind)
    assert str(failure.value).startswith(error)
