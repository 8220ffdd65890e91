"""What the message layer asks of a message, and the built-in message types.

A message carries a Gazette UUID (uuid.py) that says who published it, when,
and whether it is committed on its own (OUTSIDE_TXN), pending (CONTINUE_TXN)
or an acknowledgement (ACK_TXN). A type that cannot carry a UUID returns the
zero UUID, and readers then treat each of its messages as committed
immediately: delivery degrades to at-least-once.

Built-in types, one per framing:
- `StructMessage` (structs.py): a base for msgspec struct messages, one JSON
  object each, decoded in C a read chunk at a time (the fast choice);
- `JSONMessage`: a base for `@dataclass` messages, one JSON object each;
- `JSONRecord`: a JSON object of any shape, of which only the UUID is read;
- `CSVRecord`: a row of strings whose column 0 holds the UUID;
- `ProtoMessage`: a generated protobuf message with a UUID field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable
from uuid import UUID

import msgspec

from gazette_core.message import json_fields
from gazette_core.message.uuid import ZERO_UUID, get_parts, parse_text


@runtime_checkable
class Message(Protocol):
    def get_uuid(self) -> UUID: ...

    def set_uuid(self, u: UUID) -> None: ...

    def new_acknowledgement(self, journal: str) -> Message: ...


class Envelope(msgspec.Struct, gc=False):
    """A message and where it was read: [begin, end) are exact journal offsets.

    A struct rather than a dataclass because readers make one per message:
    msgspec builds it in C, several times faster (fields, equality and
    mutability are a dataclass's). It is not tracked by the garbage collector,
    whose passes over hundreds of thousands of live envelopes cost more than
    decoding them: a message must not refer back to its envelope.
    """

    journal: str
    begin: int
    end: int
    message: Message
    record: bytes = b""  # The record as framed, when the reader was asked to keep it.


def _parse(text: str) -> UUID:
    return UUID(text) if text else ZERO_UUID


@dataclass
class JSONMessage:
    """Base of JSON messages: subclass it as a `@dataclass` whose fields all have defaults.

    `uuid` holds the canonical 36-character form ("" until published). The
    acknowledgement is `type(self)()` with only the UUID set, so every field
    needs a default. Decoding checks each value against its field's declared
    type and fails naming the field (json_fields.py). Override
    `to_json_dict`/`load_json_dict` for other field names or nested types.
    """

    uuid: str = ""
    _names: ClassVar[dict[type, tuple[str, ...]]] = {}

    def get_uuid(self) -> UUID:
        return _parse(self.uuid)

    def set_uuid(self, u: UUID) -> None:
        self.uuid = str(u)

    def new_acknowledgement(self, journal: str) -> JSONMessage:
        return type(self)()

    @classmethod
    def _field_names(cls) -> tuple[str, ...]:
        names = JSONMessage._names.get(cls)
        if names is None:
            names = JSONMessage._names[cls] = tuple(f.name for f in dataclasses.fields(cls))
        return names

    def to_json_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._field_names()}

    def load_json_dict(self, doc: dict[str, Any]) -> None:
        """Set the fields `doc` has, each checked against its declared type (json_fields.py).

        Unknown keys are ignored: a newer writer may have added fields.
        """
        for name, exact, convert in json_fields.plan(type(self)):
            if name in doc:
                value = doc[name]
                if type(value) is not exact:
                    value = convert("", value)
                    if value is json_fields.KEEP:
                        continue
                setattr(self, name, value)


class JSONRecord:
    """A JSON-lines message of any shape: only its `uuid` is read from the document.

    `text` is for the reader to fill with the record's text, should it want it.
    """

    __slots__ = ("text", "uuid")

    def __init__(self) -> None:
        self.text = ""
        self.uuid = ZERO_UUID

    def load_json_dict(self, doc: dict[str, Any]) -> None:
        # A malformed UUID fails here, while decoding, where it is reported with its offset.
        value = doc.get("uuid")
        self.uuid = UUID(value) if isinstance(value, str) and value else ZERO_UUID

    def get_uuid(self) -> UUID:
        return self.uuid

    def set_uuid(self, u: UUID) -> None:
        self.uuid = u

    def new_acknowledgement(self, journal: str) -> JSONRecord:
        return JSONRecord()


class CSVRecord(list[str]):
    """One CSV row; column 0 must hold the UUID (or be empty for none)."""

    def get_uuid(self) -> UUID:
        return _parse(self[0]) if self else ZERO_UUID

    def set_uuid(self, u: UUID) -> None:
        if self:
            self[0] = str(u)
        else:
            self.append(str(u))

    def new_acknowledgement(self, journal: str) -> CSVRecord:
        # A row of the same width, all empty except the UUID set later.
        return CSVRecord([""] * max(len(self), 1))


class ProtoMessage:
    """A protobuf message whose `uuid_field` (string or 16 bytes) carries the UUID."""

    __slots__ = ("pb", "uuid_field")

    def __init__(self, pb: Any, uuid_field: str = "uuid") -> None:
        self.pb = pb
        self.uuid_field = uuid_field

    def get_uuid(self) -> UUID:
        value = getattr(self.pb, self.uuid_field)
        if isinstance(value, bytes):
            return UUID(bytes=value) if value else ZERO_UUID
        return _parse(value)

    def set_uuid(self, u: UUID) -> None:
        current = getattr(self.pb, self.uuid_field)
        setattr(self.pb, self.uuid_field, u.bytes if isinstance(current, bytes) else str(u))

    def new_acknowledgement(self, journal: str) -> ProtoMessage:
        return ProtoMessage(type(self.pb)(), self.uuid_field)

    def SerializeToString(self) -> bytes:  # protobuf's name: the framing calls it
        data: bytes = self.pb.SerializeToString()
        return data

    def ParseFromString(self, data: bytes) -> None:
        self.pb.ParseFromString(data)


def _text_uuid(kind: type) -> Callable[[Any], Any] | None:
    """How to read the UUID text of a `kind` message without a UUID object: its `uuid` field
    for struct and JSON messages, column 0 for CSV rows, unless the type says otherwise."""
    from gazette_core.message.structs import StructMessage

    for base in (StructMessage, JSONMessage):
        if issubclass(kind, base) and kind.get_uuid is base.get_uuid:
            return _uuid_field
    if issubclass(kind, CSVRecord) and kind.get_uuid is CSVRecord.get_uuid:
        return _column_0
    if issubclass(kind, ProtoMessage) and kind.get_uuid is ProtoMessage.get_uuid:
        return _proto_field  # A bytes field is not text: it goes through get_uuid().
    return None


def _uuid_field(msg: Any) -> Any:
    return msg.uuid


def _column_0(msg: Any) -> Any:
    return msg[0] if msg else ""


def _proto_field(msg: Any) -> Any:
    return getattr(msg.pb, msg.uuid_field)


_TEXT_OF: dict[type, Callable[[Any], Any] | None] = {}


def text_uuid_type(kind: type) -> bool:
    """Whether messages of `kind` keep their UUID as text in a `uuid` field."""
    try:
        text_of = _TEXT_OF[kind]
    except KeyError:
        text_of = _TEXT_OF[kind] = _text_uuid(kind)
    return text_of is _uuid_field


def message_parts(msg: Message) -> tuple[int, int, bytes]:
    """get_parts(msg.get_uuid()), read from the message's UUID text when it keeps one."""
    kind = type(msg)
    try:
        text_of = _TEXT_OF[kind]
    except KeyError:
        text_of = _TEXT_OF[kind] = _text_uuid(kind)
    if text_of is not None:
        text = text_of(msg)
        if type(text) is str:
            return parse_text(text)
    return get_parts(msg.get_uuid())
