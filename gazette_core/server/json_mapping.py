"""Protobuf messages as JSON the way Go's gateway writes them (gogo jsonpb, defaults emitted).

Proto3 JSON with lowerCamelCase names, and these traits of Go's generated
structs: every field is written, in declaration order, at its default value
too; a sub-message the Go struct holds by pointer is `null` when unset, one it
holds by value (NON_NULLABLE) is written with its defaults; map keys are
sorted; 64-bit integers are strings; bytes are base64, and empty bytes `null`;
enums are names; durations and timestamps use their JSON strings (`"1.500s"`).
`dumps` writes compact JSON with Go's escaping of `<`, `>` and `&`. With
`orig_names`, fields keep their proto names (`mod_revision`), as Go's gazctl
writes `list -o json` (jsonpb's OrigName).
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Sequence
from typing import Any, cast

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

_FD = FieldDescriptor
QUOTED_INTEGERS = frozenset({_FD.TYPE_INT64, _FD.TYPE_UINT64, _FD.TYPE_FIXED64,
                             _FD.TYPE_SFIXED64, _FD.TYPE_SINT64})
FLOATS = frozenset({_FD.TYPE_FLOAT, _FD.TYPE_DOUBLE})

# Sub-message fields that Go's structs hold by value, so its JSON always has them.
NON_NULLABLE = frozenset({
    "protocol.LabelSelector.include", "protocol.LabelSelector.exclude",
    "protocol.JournalSpec.labels", "protocol.JournalSpec.fragment",
    "protocol.JournalSpec.Fragment.refresh_interval", "protocol.JournalSpec.Fragment.retention",
    "protocol.JournalSpec.Fragment.flush_interval",
    "protocol.ProcessSpec.id", "protocol.BrokerSpec.process_spec", "protocol.Fragment.sum",
    "protocol.AppendResponse.header", "protocol.ListRequest.selector",
    "protocol.ListResponse.header", "protocol.ListResponse.Journal.spec",
    "protocol.ListResponse.Journal.route", "protocol.ApplyResponse.header",
    "protocol.FragmentsResponse.header", "protocol.FragmentsResponse._Fragment.spec",
    "protocol.Header.process_id", "protocol.Header.route", "protocol.Header.etcd",
    "protocol.FragmentStoreHealthResponse.header",
    "consumer.ShardSpec.max_txn_duration", "consumer.ShardSpec.min_txn_duration",
    "consumer.ShardSpec.labels", "consumer.ConsumerSpec.process_spec",
    "consumer.Checkpoint.Source.ProducerEntry.state",
    "consumer.ListRequest.selector", "consumer.ListResponse.header",
    "consumer.ListResponse.Shard.spec", "consumer.ListResponse.Shard.route",
    "consumer.ApplyResponse.header", "consumer.StatResponse.header",
    "consumer.GetHintsResponse.header", "consumer.GetHintsResponse.primary_hints",
})

# Go's encoding/json escapes these even inside strings, where alone they can occur.
_GO_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                             "\u2028": "\\u2028", "\u2029": "\\u2029"})


def dumps(value: object) -> bytes:
    """Compact JSON, escaped as Go escapes it."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.translate(_GO_ESCAPES).encode()


def to_json(message: Message, orig_names: bool = False) -> Any:
    """`message` as the JSON value (dict, or a string for durations and such) Go writes."""
    if is_well_known(message):
        return json_format.MessageToDict(message)
    out: dict[str, Any] = {}
    for field in fields_of(message):
        if field.containing_oneof is not None and not message.HasField(field.name):
            continue  # Go writes only the member of a oneof that is set
        name = field.name if orig_names else field.json_name
        out[name] = _field(message, field, orig_names)
    return out


def is_well_known(message: Message) -> bool:
    return message.DESCRIPTOR.full_name.startswith("google.protobuf.")


def fields_of(message: Message) -> Sequence[FieldDescriptor]:
    return cast("Sequence[FieldDescriptor]", message.DESCRIPTOR.fields)


def message_type(field: FieldDescriptor) -> Descriptor:
    assert field.message_type is not None, field.full_name
    return field.message_type


def enum_type(field: FieldDescriptor) -> EnumDescriptor:
    assert field.enum_type is not None, field.full_name
    return field.enum_type


def _field(message: Message, field: FieldDescriptor, orig_names: bool) -> Any:
    value = getattr(message, field.name)
    if is_map(field):
        entry = message_type(field).fields_by_name["value"]
        return {_map_key(key): _value(entry, value[key], orig_names) for key in sorted(value)}
    if field.is_repeated:
        return [_value(field, item, orig_names) for item in value]
    if field.type == _FD.TYPE_MESSAGE and not message.HasField(field.name) \
            and field.full_name not in NON_NULLABLE:
        return None
    if field.type == _FD.TYPE_BYTES and not value:
        return None  # Go's nil byte slice
    return _value(field, value, orig_names)


def is_map(field: FieldDescriptor) -> bool:
    return field.is_repeated and field.type == _FD.TYPE_MESSAGE \
        and message_type(field).GetOptions().map_entry


def _map_key(key: object) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


def _value(field: FieldDescriptor, value: Any, orig_names: bool = False) -> Any:
    kind = field.type
    if kind == _FD.TYPE_MESSAGE:
        return to_json(value, orig_names)
    if kind == _FD.TYPE_ENUM:
        known = enum_type(field).values_by_number.get(value)
        return known.name if known is not None else value
    if kind in QUOTED_INTEGERS:
        return str(value)
    if kind == _FD.TYPE_BYTES:
        return base64.b64encode(value).decode()
    if kind in FLOATS and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value
