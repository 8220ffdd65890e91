"""Records of a `value` column: each row's value is the whole message, as Kafka's sink takes it.

For a JSON journal the value is the document's text: it must be one JSON
object; the message's own `uuid` field goes first, and the text follows as
it is. A value that already has a `uuid` field (a document copied from a
journal) or that spans lines is re-encoded without it, since a message has
exactly one UUID and a record is one line. For a CSV journal the value is
the fields after the UUID (one CSV row). Strings and binary (UTF-8) are
taken alike; a null value is refused.
"""

from __future__ import annotations

import csv
import io

import msgspec
import pyarrow as pa

from gazette_core.errors import ValidationError
from spark_jobs.decode.content import JSON
from spark_jobs.sink.route import Route, column_of, route_kinds


def value_records(batch: pa.RecordBatch, name: str, route: Route, kinds: list[str],
                  uuids: pa.Array) -> pa.Array:
    """Each row's whole record made of its `name` column, by its journal's kind."""
    values = column_of(batch, name).to_pylist()
    row_kinds = route_kinds(route, kinds, batch.num_rows)
    out = []
    for kind, uuid, value in zip(row_kinds, uuids.to_pylist(), values, strict=True):
        if value is None:
            raise ValidationError(f"column {name}", "a row's value is null: the value is the "
                                  "whole message")
        text = value.encode() if isinstance(value, str) else bytes(value)
        stamp = uuid.encode()
        out.append(_json(name, stamp, text) if kind == JSON else _csv(name, stamp, text))
    return pa.array(out, type=pa.binary())


def _json(name: str, uuid: bytes, text: bytes) -> bytes:
    try:
        doc = msgspec.json.decode(text)
    except msgspec.DecodeError as exc:
        raise ValidationError(f"column {name} ({_clip(text)})",
                              f"is not a JSON document: {exc}") from None
    if not isinstance(doc, dict):
        raise ValidationError(f"column {name} ({_clip(text)})",
                              "is not a JSON object (a JSON journal's message is an object)")
    body = text.strip()
    if "uuid" in doc or b"\n" in body or b"\r" in body:
        doc.pop("uuid", None)
        body = msgspec.json.encode(doc)
    head = b'{"uuid":"' + uuid + b'"'
    return head + (b"," + body[1:].lstrip() if doc else b"}") + b"\n"


def _csv(name: str, uuid: bytes, text: bytes) -> bytes:
    body = text.removesuffix(b"\n").removesuffix(b"\r")
    try:
        rows = list(csv.reader(io.StringIO(body.decode())))
    except (csv.Error, UnicodeDecodeError) as exc:
        raise ValidationError(f"column {name} ({_clip(text)})",
                              f"is not a CSV row: {exc}") from None
    if len(rows) > 1:
        raise ValidationError(f"column {name} ({_clip(text)})",
                              "holds more than one CSV row (a message is one row)")
    return uuid + (b"," + body if body else b"") + b"\n"


def _clip(text: bytes) -> str:
    shown = text[:40].decode(errors="replace")
    return repr(shown + ("..." if len(text) > 40 else ""))
