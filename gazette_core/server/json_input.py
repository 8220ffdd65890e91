"""Request messages from JSON bodies, read as Go's gateway reads them (gogo jsonpb).

Fields go by their lowerCamelCase or their original snake_case names; an
unknown name is an error; `null` leaves a field at its default; integers come
as JSON numbers or as strings of digits (64-bit ones usually do); enums by
name or number; bytes as base64. An empty body is the empty message, and, as
in Go, whatever follows the body's first JSON value is ignored. Every
problem is a JsonInputError with a one-line message naming the field.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from gazette_core.errors import GazetteError
from gazette_core.server.json_mapping import (
    FLOATS,
    QUOTED_INTEGERS,
    enum_type,
    fields_of,
    is_map,
    is_well_known,
    message_type,
)

_FD = FieldDescriptor
_INTEGER = re.compile(r"-?(0|[1-9][0-9]{0,19})")
_RANGES = {
    _FD.TYPE_INT32: (-(1 << 31), 1 << 31), _FD.TYPE_SINT32: (-(1 << 31), 1 << 31),
    _FD.TYPE_SFIXED32: (-(1 << 31), 1 << 31), _FD.TYPE_ENUM: (-(1 << 31), 1 << 31),
    _FD.TYPE_UINT32: (0, 1 << 32), _FD.TYPE_FIXED32: (0, 1 << 32),
    _FD.TYPE_INT64: (-(1 << 63), 1 << 63), _FD.TYPE_SINT64: (-(1 << 63), 1 << 63),
    _FD.TYPE_SFIXED64: (-(1 << 63), 1 << 63),
    _FD.TYPE_UINT64: (0, 1 << 64), _FD.TYPE_FIXED64: (0, 1 << 64),
}
_names: dict[str, dict[str, FieldDescriptor]] = {}


class JsonInputError(GazetteError):
    """A request body that is not the JSON of its request message."""


def parse(body: bytes, message: Message) -> None:
    """Fill `message` from a JSON request body."""
    try:
        text = body.decode()
    except UnicodeDecodeError:
        raise JsonInputError("the request body is not UTF-8 text") from None
    text = text.lstrip(" \t\r\n")
    if not text:
        return
    try:
        value, _ = json.JSONDecoder(parse_constant=_no_constant).raw_decode(text)
    except RecursionError:
        raise JsonInputError("invalid JSON: nested too deeply") from None
    except ValueError as exc:
        raise JsonInputError(f"invalid JSON: {exc}") from None
    _message(value, message)


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _message(value: Any, message: Message) -> None:
    descriptor = message.DESCRIPTOR
    if is_well_known(message):
        try:
            json_format.ParseDict(value, message)
        except json_format.ParseError:
            raise JsonInputError(f"not a valid {descriptor.full_name}: {_show(value)}") from None
        return
    if not isinstance(value, dict):
        raise JsonInputError(f"{descriptor.full_name} must be a JSON object, not {_show(value)}")
    fields = _fields(message)
    for name, item in value.items():
        field = fields.get(name)
        if field is None:
            raise JsonInputError(f'unknown field "{name}" in {descriptor.full_name}')
        if item is not None:
            _set(message, field, item)


def _fields(message: Message) -> dict[str, FieldDescriptor]:
    """`message`'s fields by their JSON and their original names."""
    name = message.DESCRIPTOR.full_name
    found = _names.get(name)
    if found is None:
        found = {f.name: f for f in fields_of(message)}
        found.update({f.json_name: f for f in fields_of(message)})
        _names[name] = found
    return found


def _set(message: Message, field: FieldDescriptor, value: Any) -> None:
    target = getattr(message, field.name)
    if is_map(field):
        if not isinstance(value, dict):
            raise _bad(field, value, "a JSON object")
        key_field, value_field = message_type(field).fields
        for key, item in value.items():
            key = _scalar(key_field, key, field, keyed=True)
            if value_field.type == _FD.TYPE_MESSAGE:
                _message(item, target[key])
            elif item is not None:
                target[key] = _scalar(value_field, item, field)
    elif field.is_repeated:
        if not isinstance(value, list):
            raise _bad(field, value, "a JSON array")
        for item in value:
            if field.type == _FD.TYPE_MESSAGE:
                _message(item, target.add())
            else:
                target.append(_scalar(field, item, field))
    elif field.type == _FD.TYPE_MESSAGE:
        target.SetInParent()
        _message(value, target)
    else:
        setattr(message, field.name, _scalar(field, value, field))


def _scalar(field: FieldDescriptor, value: Any, named: FieldDescriptor,
            keyed: bool = False) -> Any:
    """The value of a scalar `field` (of `named`, which errors name) from JSON."""
    kind = field.type
    if kind == _FD.TYPE_STRING and isinstance(value, str):
        return value
    if kind == _FD.TYPE_BOOL:
        if keyed and value in ("true", "false"):
            return value == "true"
        if isinstance(value, bool):
            return value
        raise _bad(named, value, "true or false")
    if kind == _FD.TYPE_BYTES and isinstance(value, str):
        return _base64(value, named)
    if kind == _FD.TYPE_ENUM and isinstance(value, str):
        known = enum_type(field).values_by_name.get(value)
        if known is None:
            raise _bad(named, value, f"a value of {enum_type(field).full_name}")
        return known.number
    if kind in _RANGES:
        return _integer(field, value, named)
    if kind in FLOATS:
        return _float(value, named)
    raise _bad(named, value, "a string" if kind == _FD.TYPE_STRING else "a base64 string")


def _integer(field: FieldDescriptor, value: Any, named: FieldDescriptor) -> int:
    if isinstance(value, str) and _INTEGER.fullmatch(value):
        number = int(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        want = "an enum name or number" if field.type == _FD.TYPE_ENUM else "an integer"
        raise _bad(named, value, want)
    low, high = _RANGES[field.type]
    if not low <= number < high:
        kind = "64-bit" if field.type in QUOTED_INTEGERS else "32-bit"
        raise _bad(named, value, f"a {kind} {'unsigned ' if low == 0 else ''}integer")
    return number


def _float(value: Any, named: FieldDescriptor) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if value in ("NaN", "Infinity", "-Infinity"):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise _bad(named, value, "a number")


def _base64(value: str, named: FieldDescriptor) -> bytes:
    padded = value.replace("-", "+").replace("_", "/")
    padded += "=" * (-len(padded) % 4)
    try:
        return base64.b64decode(padded, validate=True)
    except binascii.Error:
        raise _bad(named, value, "base64") from None


def _bad(field: FieldDescriptor, value: Any, want: str) -> JsonInputError:
    owner = field.containing_type.full_name if field.containing_type else "?"
    return JsonInputError(f'field "{field.json_name}" of {owner} must be {want}, '
                          f"not {_show(value)}")


def _show(value: Any) -> str:
    """A JSON value in an error message, cut short."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."
