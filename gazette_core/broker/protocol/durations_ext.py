"""google.protobuf.Duration helpers and Go's `time.Duration` text form.

Specs carry durations as protobuf Durations on the wire, while gazctl YAML and
error messages use Go's duration strings (`1m0s`, `720h0m0s`, `1.5s`). Both
directions work in integer nanoseconds so that round trips are exact.
"""

from __future__ import annotations

from google.protobuf.duration_pb2 import Duration

from gazette_core.broker.protocol.names_ext import quote
from gazette_core.errors import ValidationError

NANOS_PER_SECOND = 1_000_000_000
_MAX_NANOS = (1 << 63) - 1
_UNITS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign, as Go prints it
    "\u03bcs": 1_000,  # Greek small letter mu
    "ms": 1_000_000,
    "s": NANOS_PER_SECOND,
    "m": 60 * NANOS_PER_SECOND,
    "h": 3600 * NANOS_PER_SECOND,
}


def validate_duration(d: Duration, path: str) -> None:
    """A well-formed protobuf Duration that fits Go's time.Duration (int64 nanoseconds).

    Go brokers fail to decode anything longer (about 292 years) or malformed.
    """
    if not -NANOS_PER_SECOND < d.nanos < NANOS_PER_SECOND:
        raise ValidationError(path, f"expected -999999999 <= nanos <= 999999999 (got {d.nanos})")
    if (d.seconds < 0 < d.nanos) or (d.nanos < 0 < d.seconds):
        raise ValidationError(
            path, f"seconds {d.seconds} and nanos {d.nanos} must have the same sign")
    if not -_MAX_NANOS - 1 <= to_nanos(d) <= _MAX_NANOS:
        raise ValidationError(
            path, f"{d.seconds}s exceeds the longest duration, {format_go_nanos(_MAX_NANOS)}")


def to_nanos(d: Duration) -> int:
    """Total nanoseconds of a Duration."""
    return d.seconds * NANOS_PER_SECOND + d.nanos


def from_nanos(nanos: int) -> Duration:
    """A Duration of `nanos` nanoseconds (seconds and nanos share one sign)."""
    sign = -1 if nanos < 0 else 1
    seconds, rest = divmod(abs(nanos), NANOS_PER_SECOND)
    return Duration(seconds=sign * seconds, nanos=sign * rest)


def to_seconds(d: Duration) -> float:
    """Seconds of a Duration as a float."""
    return d.seconds + d.nanos / NANOS_PER_SECOND


def from_seconds(seconds: float) -> Duration:
    """A Duration of `seconds`, rounded to the nearest nanosecond."""
    return from_nanos(round(seconds * NANOS_PER_SECOND))


def _split_fraction(value: int, digits: int) -> tuple[int, str]:
    """(whole, ".fff" with trailing zeros trimmed) of a fixed-point `value`."""
    whole, frac = divmod(value, 10**digits)
    text = f"{frac:0{digits}d}".rstrip("0")
    return whole, (f".{text}" if text else "")


def format_go_nanos(nanos: int) -> str:
    """Go's time.Duration.String() of `nanos` nanoseconds."""
    sign = "-" if nanos < 0 else ""
    u = abs(nanos)
    if u == 0:
        return "0s"
    if u < 1_000:
        return f"{sign}{u}ns"
    if u < 1_000_000:
        whole, frac = _split_fraction(u, 3)
        return f"{sign}{whole}{frac}\u00b5s"
    if u < NANOS_PER_SECOND:
        whole, frac = _split_fraction(u, 6)
        return f"{sign}{whole}{frac}ms"
    secs, frac = _split_fraction(u, 9)
    text = f"{secs % 60}{frac}s"
    minutes = secs // 60
    if minutes:
        text = f"{minutes % 60}m{text}"
        if minutes // 60:
            text = f"{minutes // 60}h{text}"
    return sign + text


def format_go_duration(seconds: float) -> str:
    """Go's time.Duration.String() of `seconds` (e.g. "0s", "1m0s", "1.5s", "500ms")."""
    return format_go_nanos(round(seconds * NANOS_PER_SECOND))


def format_duration(d: Duration) -> str:
    """Go's time.Duration.String() of a protobuf Duration."""
    return format_go_nanos(to_nanos(d))


def _leading_digits(text: str) -> str:
    end = 0
    while end < len(text) and text[end].isascii() and text[end].isdigit():
        end += 1
    return text[:end]


def _parse_term(rest: str, orig: str, path: str) -> tuple[int, str]:
    """Parse one `<number><unit>` term from `rest`: (nanoseconds, remainder)."""
    whole = _leading_digits(rest)
    rest = rest[len(whole) :]
    frac = ""
    has_dot = rest.startswith(".")
    if has_dot:
        frac = _leading_digits(rest[1:])
        rest = rest[1 + len(frac) :]
    if not whole and not frac:
        raise ValidationError(path, f"invalid duration {quote(orig)}")
    unit_end = 0
    while (
        unit_end < len(rest)
        and rest[unit_end] != "."
        and not (rest[unit_end].isascii() and rest[unit_end].isdigit())
    ):
        unit_end += 1
    unit, rest = rest[:unit_end], rest[unit_end:]
    if not unit:
        raise ValidationError(path, f"missing unit in duration {quote(orig)}")
    if unit not in _UNITS:
        raise ValidationError(path, f"unknown unit {quote(unit)} in duration {quote(orig)}")
    scale = _UNITS[unit]
    nanos = int(whole or "0") * scale + (int(frac) * scale // 10 ** len(frac) if frac else 0)
    return nanos, rest


def parse_go_nanos(text: str, path: str = "duration") -> int:
    """Parse Go duration syntax (`1h30m`, `-1.5s`, `300ms`, `0`) into nanoseconds."""
    rest, negative = text, False
    if rest[:1] in ("-", "+"):
        negative, rest = rest[0] == "-", rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise ValidationError(path, f"invalid duration {quote(text)}")
    total = 0
    while rest:
        if not (rest[0] == "." or (rest[0].isascii() and rest[0].isdigit())):
            raise ValidationError(path, f"invalid duration {quote(text)}")
        nanos, rest = _parse_term(rest, text, path)
        total += nanos
        if total > _MAX_NANOS + (1 if negative else 0):
            raise ValidationError(path, f"invalid duration {quote(text)} (overflows int64)")
    return -total if negative else total


def parse_go_duration(text: str, path: str = "duration") -> float:
    """Parse Go duration syntax into seconds; ValidationError at `path` on junk."""
    return parse_go_nanos(text, path) / NANOS_PER_SECOND


def parse_duration(text: str, path: str = "duration") -> Duration:
    """Parse Go duration syntax into an exact protobuf Duration."""
    return from_nanos(parse_go_nanos(text, path))
