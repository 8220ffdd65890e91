"""Go duration text form and protobuf Duration conversions."""

from __future__ import annotations

import pytest
from google.protobuf.duration_pb2 import Duration

from gazette_core.broker.protocol.durations_ext import (
    format_duration,
    format_go_duration,
    format_go_nanos,
    from_nanos,
    from_seconds,
    parse_duration,
    parse_go_duration,
    parse_go_nanos,
    to_nanos,
    to_seconds,
    validate_duration,
)
from gazette_core.errors import ValidationError


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (1, "1s"),
        (1.5, "1.5s"),
        (0.5, "500ms"),
        (60, "1m0s"),
        (90, "1m30s"),
        (3600, "1h0m0s"),
        (720 * 3600, "720h0m0s"),
        (24 * 3600, "24h0m0s"),
        (-1.5, "-1.5s"),
        (0.0015, "1.5ms"),
        (0.000002, "2\u00b5s"),
        (0.000000001, "1ns"),
        (3723.25, "1h2m3.25s"),
    ],
)
def test_format_go_duration(seconds: float, text: str) -> None:
    assert format_go_duration(seconds) == text


def test_format_go_nanos_sub_microsecond_precision() -> None:
    assert format_go_nanos(1_234_567_891) == "1.234567891s"
    assert format_go_nanos(1_500) == "1.5\u00b5s"
    assert format_go_nanos(-999) == "-999ns"


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        ("0", 0),
        ("0s", 0),
        ("-0", 0),
        ("1s", 1_000_000_000),
        ("+1s", 1_000_000_000),
        ("-1.5s", -1_500_000_000),
        ("1m0s", 60_000_000_000),
        ("720h0m0s", 720 * 3600 * 1_000_000_000),
        ("1h30m", 5400 * 1_000_000_000),
        ("300ms", 300_000_000),
        ("2us", 2_000),
        ("2\u00b5s", 2_000),
        ("2\u03bcs", 2_000),
        ("7ns", 7),
        (".5s", 500_000_000),
        ("1.s", 1_000_000_000),
        ("1h2m3.25s", 3_723_250_000_000),
    ],
)
def test_parse_go_nanos(text: str, nanos: int) -> None:
    assert parse_go_nanos(text) == nanos


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", 'invalid duration ""'),
        ("-", 'invalid duration "-"'),
        ("s", 'invalid duration "s"'),
        (".s", 'invalid duration ".s"'),
        ("1", 'missing unit in duration "1"'),
        ("1s2", 'missing unit in duration "1s2"'),
        ("1x", 'unknown unit "x" in duration "1x"'),
        ("1 s", 'unknown unit " s" in duration "1 s"'),
        ("1s ", 'unknown unit "s " in duration "1s "'),
        ("3000000h", 'invalid duration "3000000h" (overflows int64)'),
    ],
)
def test_parse_go_duration_rejects_junk(text: str, reason: str) -> None:
    with pytest.raises(ValidationError) as info:
        parse_go_duration(text, "fragment.retention")
    assert str(info.value) == f"fragment.retention: {reason}"


def test_parse_go_duration_returns_seconds() -> None:
    assert parse_go_duration("1m30s") == 90.0
    assert parse_go_duration("250ms") == 0.25


def test_duration_message_conversions() -> None:
    assert from_seconds(1.5) == Duration(seconds=1, nanos=500_000_000)
    assert from_seconds(-1.5) == Duration(seconds=-1, nanos=-500_000_000)
    assert from_nanos(60_000_000_007) == Duration(seconds=60, nanos=7)
    assert to_seconds(Duration(seconds=2, nanos=250_000_000)) == 2.25
    assert to_nanos(Duration(seconds=-1, nanos=-5)) == -1_000_000_005
    assert parse_duration("720h0m0s") == Duration(seconds=720 * 3600)
    assert format_duration(Duration(seconds=86400)) == "24h0m0s"


@pytest.mark.parametrize("text", ["0s", "1.5s", "1m0s", "720h0m0s", "500ms", "2\u00b5s", "9ns"])
def test_format_parse_round_trip(text: str) -> None:
    assert format_go_nanos(parse_go_nanos(text)) == text


@pytest.mark.parametrize(("seconds", "nanos"), [
    (0, 0), (5, 999_999_999), (-5, -999_999_999), (9_223_372_036, 854_775_807),
    (-9_223_372_036, -854_775_808)])
def test_validate_duration_accepts_what_fits_go_time_duration(seconds: int, nanos: int) -> None:
    validate_duration(Duration(seconds=seconds, nanos=nanos), "d")


@pytest.mark.parametrize(("seconds", "nanos", "reason"), [
    (0, 1_000_000_000, "expected -999999999 <= nanos <= 999999999 (got 1000000000)"),
    (0, -1_000_000_000, "expected -999999999 <= nanos <= 999999999 (got -1000000000)"),
    (1, -1, "seconds 1 and nanos -1 must have the same sign"),
    (9_223_372_036, 854_775_808,
     "9223372036s exceeds the longest duration, 2562047h47m16.854775807s"),
])
def test_validate_duration_refuses_malformed_and_overlong(
        seconds: int, nanos: int, reason: str) -> None:
    with pytest.raises(ValidationError) as info:
        validate_duration(Duration(seconds=seconds, nanos=nanos), "d")
    assert str(info.value) == f"d: {reason}"
