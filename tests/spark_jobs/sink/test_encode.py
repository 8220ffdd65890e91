"""Rows encoded by the sink read back through the message framings, UUID and all."""

from __future__ import annotations

import datetime
import decimal
from uuid import UUID

import pytest

from gazette_core.errors import ValidationError
from gazette_core.message.framing import CSVFraming, JSONFraming
from gazette_core.message.interfaces import CSVRecord
from gazette_core.message.uuid import Flags, build_uuid, get_parts
from spark_jobs.decode.content import CSV, JSON
from spark_jobs.sink.acks import commit_records, rollback_records
from spark_jobs.sink.encode import encode_row, stamp
from tests.spark_jobs.sink.sink_support import Doc

U = str(build_uuid(bytes.fromhex("0b0000000001"), 1000 << 4, Flags.CONTINUE_TXN))
ROW = {"n": 3, "ok": True, "x": 0.5, "text": 'a, "b"\nc', "none": None,
       "at": datetime.datetime(2024, 5, 1, 12, 0, tzinfo=datetime.UTC),
       "day": datetime.date(2024, 5, 1), "price": decimal.Decimal("1.10"),
       "raw": b"\x00\xff", "tags": ["a", "b"], "attrs": {"k": 1}}


def test_a_json_row_is_its_columns_and_the_uuid() -> None:
    record = stamp(JSON, U, encode_row(JSON, ROW))
    msg = JSONFraming().unmarshal(record.rstrip(b"\n"), Doc())
    assert isinstance(msg, Doc)
    assert msg.get_uuid() == UUID(U)
    assert msg.doc == {"uuid": U, "n": 3, "ok": True, "x": 0.5, "text": 'a, "b"\nc',
                       "none": None, "at": "2024-05-01T12:00:00+00:00", "day": "2024-05-01",
                       "price": "1.10", "raw": "AP8=", "tags": ["a", "b"], "attrs": {"k": 1}}
    assert stamp(JSON, U, encode_row(JSON, {})) == b'{"uuid":"' + U.encode() + b'"}\n'


def test_a_csv_row_is_the_uuid_then_its_columns() -> None:
    record = stamp(CSV, U, encode_row(CSV, ROW))
    msg = CSVFraming().unmarshal(record, CSVRecord())
    assert list(msg) == [U, "3", "true", "0.5", 'a, "b"\nc', "", "2024-05-01T12:00:00+00:00",
                         "2024-05-01", "1.10", "AP8=", '["a","b"]', '{"k":1}']
    assert stamp(CSV, U, encode_row(CSV, {"only": ""})) == U.encode() + b',""\n'


def test_acks_commit_at_the_last_clock_and_roll_back_below_any_clock() -> None:
    span = ("a/journal", "0b0000000001", 1000 << 4, 1010 << 4, CSV)
    ack = CSVFraming().unmarshal(commit_records([span], 2), CSVRecord())
    assert list(ack)[1:] == ["", ""]
    assert get_parts(ack.get_uuid()) == (1010 << 4, Flags.ACK_TXN, bytes.fromhex("0b0000000001"))
    back = JSONFraming().unmarshal(rollback_records([(*span[:4], JSON)], 2).rstrip(), Doc())
    assert get_parts(back.get_uuid())[:2] == (1, Flags.ACK_TXN)  # below any stamped clock


@pytest.mark.parametrize(("kind", "value"), [(JSON, float("nan")), (JSON, {1, 2})])
def test_a_value_that_cannot_be_encoded_names_its_column(kind: str, value: object) -> None:
    with pytest.raises(ValidationError, match=r"^column bad \(.*\): cannot be written"):
        encode_row(kind, {"n": 1, "bad": value})
