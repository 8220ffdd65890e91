"""ReplicaStatus merge by max code, FAILED statuses and their truncation."""

from __future__ import annotations

import pytest

from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol.status_ext import (
    failed_status,
    merge_status,
    validate_replica_status,
)
from gazette_core.errors import ValidationError

RS = cpb.ReplicaStatus


def test_merge_takes_max_code_and_concatenates_errors() -> None:
    a = RS(code=RS.FAILED, errors=["first"])
    b = RS(code=RS.STANDBY)
    assert merge_status(a, b) == RS(code=RS.FAILED, errors=["first"])
    assert merge_status(b, a) == RS(code=RS.FAILED, errors=["first"])
    c = RS(code=RS.FAILED, errors=["second"])
    assert merge_status(a, c) == RS(code=RS.FAILED, errors=["first", "second"])
    assert merge_status(RS(code=RS.BACKFILL), RS(code=RS.PRIMARY)) == RS(code=RS.PRIMARY)


def test_failed_status_truncates_to_2048_runes() -> None:
    assert failed_status("boom") == RS(code=RS.FAILED, errors=["boom"])
    exact = "é" * 2048
    assert failed_status(exact).errors == [exact]
    long = "é" * 2049
    assert failed_status(long).errors == ["é" * 2048 + " ...[truncated]"]


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (RS(code=RS.FAILED), "errors: expected errors with code FAILED"),
        (RS(code=RS.STANDBY, errors=["x"]), "errors: expected no errors with code STANDBY"),
        (RS(code=7), "code: invalid ReplicaStatus code 7"),  # type: ignore[arg-type]
    ],
)
def test_invalid_statuses(status: cpb.ReplicaStatus, message: str) -> None:
    with pytest.raises(ValidationError) as info:
        validate_replica_status(status)
    assert str(info.value) == message
