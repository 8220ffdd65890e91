"""Go's JSON of a protobuf message: what Go's gazctl prints for `list -o json`.

Go writes a message with its original proto field names and every field,
set or not: int64 values as strings, enums by name, durations as strings such
as "60s", bytes as base64, fields in the order they are declared. Go's
structs hold most sub-messages by value, so an unset one comes out with its
own defaults (Python's json_format would leave it out); the few Go holds by
pointer, and empty bytes, come out as `null`.
"""

from __future__ import annotations

import base64
import json
import math
from typing import Any, cast

from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

# Sub-message fields Go holds by pointer, so that an unset one is written `null`. Every
# other sub-message (a Header, a Route, a spec's labels and durations) Go holds by value.
NULLABLE = frozenset({
    "protocol.JournalSpec.suspend",
    "protocol.FragmentsRequest.signatureTTL",
})
_INT64 = frozenset({FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT64,
                    FieldDescriptor.TYPE_SINT64, FieldDescriptor.TYPE_FIXED64,
                    FieldDescriptor.TYPE_SFIXED64})
_FLOAT = frozenset({FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE})


def go_value(msg: Message) -> Any:
    """`msg` as Go writes it: a dict, or a string for a Duration and its kind."""
    if msg.DESCRIPTOR.file.package == "google.protobuf":
        return json_format.MessageToDict(msg)  # well-known types have their own forms
    doc: dict[str, Any] = {}
    for field in msg.DESCRIPTOR.fields:
        if field.containing_oneof is not None and not msg.HasField(field.name):
            continue  # Go leaves out a oneof that is not set
        doc[field.name] = _field(msg, cast(FieldDescriptor, field))
    return doc


def go_json(msg: Message) -> str:
    """`msg` as one compact line of Go's JSON."""
    return dumps(go_value(msg))


def dumps(doc: Any) -> str:
    """Compact JSON, as Go writes it: no spaces, non-ASCII text unescaped."""
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def _field(msg: Message, field: FieldDescriptor) -> Any:
    value = getattr(msg, field.name)
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        value_field = field.message_type.fields_by_name["value"]
        return {str(k): _one(value_field, v) for k, v in value.items()}
    if field.is_repeated:
        return [_one(field, item) for item in value]
    if field.full_name in NULLABLE and not msg.HasField(field.name):
        return None
    if field.type == FieldDescriptor.TYPE_BYTES and not value:
        return None  # Go's nil byte slice
    return _one(field, value)


def _one(field: FieldDescriptor, value: Any) -> Any:
    """One value of `field` (an item, when it is repeated)."""
    kind = field.type
    if kind == FieldDescriptor.TYPE_MESSAGE:
        return go_value(value)
    if kind == FieldDescriptor.TYPE_ENUM:
        enum = field.enum_type
        named = enum.values_by_number.get(value) if enum is not None else None
        return named.name if named is not None else value  # an unknown number, as Go
    if kind in _INT64:
        return str(value)
    if kind == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode()
    if kind in _FLOAT and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value
