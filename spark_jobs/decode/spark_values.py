"""One JSON value into a column of a given type, by the rules of Spark's JSON reader.

Arrow's JSON reader takes a block of documents whose values have their
columns' JSON kinds (json_blocks.py); a document it refuses is read here, one
value at a time, with the coercions Spark's reader makes (docs/dataframes.md,
"Schemas and parse modes"): any value into a STRING column gives its JSON
text, an integer into a DOUBLE its value, "NaN" and "Infinity" into a
DOUBLE the special values, a DATE from `yyyy-MM-dd`, a TIMESTAMP from ISO
8601 text or a number of seconds, BINARY from base64, a DECIMAL from a
number or its text rounded half up to the scale. A value that fits none of
these is a `Misfit`, whose text says what was found and what was wanted.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import decimal
import json
import math
import re
from typing import Any

import pyarrow as pa

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}$")
_SPECIAL = {"NaN": math.nan, "Infinity": math.inf, "+Infinity": math.inf,
            "-Infinity": -math.inf, "INF": math.inf, "+INF": math.inf, "-INF": -math.inf}
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


class Misfit(ValueError):
    """A value that does not fit its column's type."""


class _Int(int):
    text: str


class _Float(float):
    text: str


def _int(text: str) -> int:
    out = _Int(text)
    out.text = text
    return out


def _float(text: str) -> float:
    out = _Float(text)
    out.text = text
    return out


def loads(text: str | bytes) -> Any:
    """The document, its numbers keeping their text (a number into STRING gives it)."""
    return json.loads(text, parse_int=_int, parse_float=_float)


def type_name(kind: pa.DataType) -> str:
    """The Spark SQL name of the type an Arrow column of `kind` holds."""
    names = {pa.bool_(): "BOOLEAN", pa.int8(): "TINYINT", pa.int16(): "SMALLINT",
             pa.int32(): "INT", pa.int64(): "BIGINT", pa.float32(): "FLOAT",
             pa.float64(): "DOUBLE", pa.string(): "STRING", pa.binary(): "BINARY",
             pa.date32(): "DATE"}
    if kind in names:
        return names[kind]
    if pa.types.is_timestamp(kind):
        return "TIMESTAMP" if kind.tz else "TIMESTAMP_NTZ"
    if pa.types.is_decimal(kind):
        return f"DECIMAL({kind.precision},{kind.scale})"
    if pa.types.is_map(kind):
        return f"MAP<{type_name(kind.key_type)},{type_name(kind.item_type)}>"
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return f"ARRAY<{type_name(kind.value_type)}>"
    if pa.types.is_struct(kind):
        return "STRUCT<" + ",".join(f"{f.name}:{type_name(f.type)}" for f in kind) + ">"
    return str(kind).upper()


def _found(value: Any) -> str:
    """What a JSON value is, for an error line: `the string "x"`, `the number 1.5`."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {getattr(value, 'text', value)}"
    if isinstance(value, str):
        return f"the string {json.dumps(value[:40])}"
    return "an object" if isinstance(value, dict) else "an array"


def _misfit(value: Any, kind: pa.DataType) -> Misfit:
    return Misfit(f"{_found(value)} does not fit {type_name(kind)}")


def convert(value: Any, kind: pa.DataType) -> Any:
    """`value` (from `loads`) as a Python value of an Arrow column of `kind`."""
    if value is None:
        return None
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return _text(value)
    if pa.types.is_boolean(kind) and isinstance(value, bool):
        return value
    if pa.types.is_integer(kind) and isinstance(value, int) and not isinstance(value, bool):
        if -(1 << (kind.bit_width - 1)) <= value < 1 << (kind.bit_width - 1):
            return int(value)
        raise Misfit(f"{_found(value)} is out of {type_name(kind)}'s range")
    if pa.types.is_floating(kind):
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str) and value in _SPECIAL:
            return _SPECIAL[value]
    if pa.types.is_decimal(kind) and isinstance(value, int | float | str) and not isinstance(
            value, bool):
        return _decimal(value, kind)
    if isinstance(value, str):
        parsed = _from_text(value, kind)
        if parsed is not None:
            return parsed
    if pa.types.is_timestamp(kind) and isinstance(value, int) and not isinstance(value, bool):
        return _zoned(_EPOCH + datetime.timedelta(seconds=int(value)), kind)
    if (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and isinstance(value, list):
        return [convert(item, kind.value_type) for item in value]
    if pa.types.is_map(kind) and isinstance(value, dict):
        return [(convert(k, kind.key_type), convert(v, kind.item_type))
                for k, v in value.items()]
    if pa.types.is_struct(kind) and isinstance(value, dict):
        return {f.name: convert(value.get(f.name), f.type) for f in kind}
    raise _misfit(value, kind)


def _text(value: Any) -> str:
    """A STRING column's value: a string as it is, anything else its JSON text."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return getattr(value, "text", repr(value))
    # Compact, as publishers write documents (Spark's reader keeps the source's spacing).
    return json.dumps(value, separators=(",", ":"))


def _decimal(value: int | float | str, kind: pa.DataType) -> decimal.Decimal:
    try:
        exact = decimal.Decimal(getattr(value, "text", str(value)).strip())
        out = exact.quantize(decimal.Decimal(1).scaleb(-kind.scale),
                             rounding=decimal.ROUND_HALF_UP)
    except (decimal.InvalidOperation, ValueError):
        raise _misfit(value, kind) from None
    if not out.is_finite() or len(out.as_tuple().digits) > kind.precision:
        raise Misfit(f"{_found(value)} does not fit {type_name(kind)}")
    return out


def _from_text(value: str, kind: pa.DataType) -> Any:
    """A DATE, TIMESTAMP or BINARY from its text, or None (not one of those, or no fit)."""
    try:
        if pa.types.is_date32(kind) and _DATE.match(value):
            return datetime.date.fromisoformat(value)
        if pa.types.is_timestamp(kind):
            return _zoned(datetime.datetime.fromisoformat(value.strip()), kind)
        if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
            return base64.b64decode(value, validate=True)
    except (ValueError, binascii.Error):
        return None
    return None


def _zoned(moment: datetime.datetime, kind: pa.DataType) -> datetime.datetime:
    """A TIMESTAMP (zone given or else UTC, the session's) or a TIMESTAMP_NTZ (wall time)."""
    if not kind.tz:
        return moment.replace(tzinfo=None)
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)
