"""StructMessage: JSON messages decoded straight into typed msgspec structs, in C.

A subclass declares its fields like a dataclass's, each with a default (the
acknowledgement is `type(self)()` with only the UUID set):

    class Tick(StructMessage):
        key: str = ""
        sent_ns: int = 0

Decoding checks every value against its field's type as msgspec does (an
int where a float is declared is taken; null only for an Optional field)
and a mismatch fails naming the field, as json_fields.py words it for
JSONMessage. Unknown keys are ignored: a newer writer may have added fields.
A reader decodes a whole chunk of records of one struct type at once
(`decode_lines`).
"""

from __future__ import annotations

import re
from typing import Any
from uuid import UUID

import msgspec

from gazette_core.message.json_fields import FieldTypeError, _mismatch
from gazette_core.message.uuid import ZERO_UUID, parse_text

_DECODERS: dict[type, msgspec.json.Decoder[Any]] = {}
_PATH = re.compile(r"\.(\w+)|\[(\d+)\]|\[\.\.\.\]")
_ERROR = re.compile(r"^Expected `([^`]+)`, got `(\w+)`(?: - at `\$(.*)`)?$")
_KINDS = {"str": "string", "int": "number", "float": "number", "bool": "boolean",
          "null": "null", "array": "array", "object": "object"}


class StructMessage(msgspec.Struct):
    """Base of struct messages; `uuid` holds the canonical 36-character form ("" until
    published)."""

    uuid: str = ""

    def get_uuid(self) -> UUID:
        return UUID(self.uuid) if self.uuid else ZERO_UUID

    def set_uuid(self, u: UUID) -> None:
        self.uuid = str(u)

    def uuid_parts(self) -> tuple[int, int, bytes]:
        """(clock, flags, producer) as uuid.get_parts(self.get_uuid()), without a UUID."""
        return parse_text(self.uuid)

    def new_acknowledgement(self, journal: str) -> StructMessage:
        return type(self)()


def decoder(cls: type) -> msgspec.json.Decoder[Any]:
    """The JSON decoder into struct type `cls` (made once per type)."""
    found = _DECODERS.get(cls)
    if found is None:
        found = _DECODERS[cls] = msgspec.json.Decoder(cls)
    return found


def field_error(cls: type, record: bytes, err: msgspec.ValidationError) -> Exception:
    """`err` said as JSONMessage decoding says it: a FieldTypeError naming the field and the
    value, or a ValueError for a document that is not an object."""
    found = _ERROR.match(str(err))
    if found is None:  # e.g. "Number out of range - at `$.x`"
        return FieldTypeError(f"{cls.__name__}: {err}")
    expected, got, path = found.group(1), found.group(2), found.group(3) or ""
    if not path:
        return ValueError(f"JSON message is not an object: {record[:80]!r}")
    value: Any = msgspec.json.decode(record)
    shown = cls.__name__
    for name, index in ((m.group(1), m.group(2)) for m in _PATH.finditer(path)):
        if (name is None and index is None) or value is _UNKNOWN:  # a key msgspec does not say
            value = _UNKNOWN
        elif name is not None:
            value = value.get(name, _UNKNOWN) if isinstance(value, dict) else _UNKNOWN
        else:
            value = value[int(index)] if isinstance(value, list) else _UNKNOWN
    shown += path
    if value is _UNKNOWN:
        return FieldTypeError(f"field {shown}: expected {expected}, got {_KINDS.get(got, got)}")
    return _mismatch(shown, expected, value)


_UNKNOWN = object()
