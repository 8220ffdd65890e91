"""Rows to message records: JSON lines or CSV, by the target journal's framing.

A row is encoded BEFORE its UUID exists (`encode_row`), so a batch of rows
is checked whole before any of it is published; `stamp` then puts the UUID
in: as the document's `uuid` field for JSON (Gazette's convention), as the
first field for CSV. ACKs (`ack_record`) carry only the UUID: `{"uuid":..}`,
or a CSV row as wide as the messages with every other field empty.

Values: JSON keeps numbers, booleans, strings, lists and structs; maps
become objects; timestamps and dates ISO 8601 text; decimals their exact
text; binary base64 (as Go marshals []byte). NaN and the infinities are
refused (not JSON). CSV writes null as an empty field, booleans as
true/false, nested values as their JSON text.
"""

from __future__ import annotations

import base64
import csv
import datetime
import decimal
import io
import json
from typing import Any

from gazette_core.errors import ValidationError
from gazette_core.message.framing import CSV as CSV_TYPE
from gazette_core.message.framing import JSON_LINES
from spark_jobs.decode.content import CSV, JSON


def kind_of(content_type: str) -> str | None:
    """JSON or CSV for a content type rows can be written as, else None."""
    base = content_type.split(";", 1)[0].strip().lower()
    return {JSON_LINES: JSON, CSV_TYPE: CSV}.get(base)


def _plain(value: Any) -> Any:
    """A JSON-able stand-in for values json does not know."""
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    raise TypeError(f"{type(value).__name__} is not JSON")


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=False, default=_plain)


def _csv_field(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, dict | list | tuple):
        return _json(value)
    return str(_plain(value))


def encode_row(kind: str, row: dict[str, Any]) -> bytes:
    """The record of `row` without its UUID: a JSON object, or CSV fields and "\\n"."""
    try:
        if kind == JSON:
            return _json(row).encode()
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerow([_csv_field(v) for v in row.values()])
        return out.getvalue().encode() if row else b"\n"
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"column {_culprit(kind, row)}",
                              f"cannot be written as a message: {exc}") from None


def _culprit(kind: str, row: dict[str, Any]) -> str:
    """The name of the first column that does not encode (for the error line)."""
    for name, value in row.items():
        try:
            _json(value) if kind == JSON else _csv_field(value)
        except (TypeError, ValueError):
            return f"{name} ({value!r})"
    return "?"


def stamp(kind: str, uuid: str, body: bytes) -> bytes:
    """The whole record: `body` from encode_row with `uuid` put in."""
    if kind == JSON:
        rest = b"," + body[1:] if len(body) > 2 else b"}"
        return b'{"uuid":"' + uuid.encode() + b'"' + rest + b"\n"
    return uuid.encode() + (b"," + body if body != b"\n" else body)


def ack_record(kind: str, uuid: str, width: int) -> bytes:
    """An acknowledgement: only the UUID (CSV: `width` fields after it, all empty)."""
    if kind == JSON:
        return b'{"uuid":"' + uuid.encode() + b'"}\n'
    return uuid.encode() + b"," * width + b"\n"
