"""Framings: how messages are written to and read from a journal's bytes.

A journal's `content-type` label picks the framing (docs/design/consumer.md#messages):
- `application/x-ndjson`: one compact JSON document per `\\n`-terminated line;
- `text/csv`: RFC 4180 rows with the UUID in column 0 (framing_csv.py);
- `application/x-protobuf-fixed`: magic word, LE uint32 length, protobuf
  bytes, resynchronising on desync (framing_proto.py).

Each framing marshals one message to one complete record, unmarshals one
record into a message, and gives an incremental splitter (splitter.py) that
cuts read chunks into records.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

import msgspec

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.message.framing_csv import CSVFraming
from gazette_core.message.framing_proto import ProtoFixedFraming
from gazette_core.message.interfaces import Message
from gazette_core.message.splitter import LineSplitter, Splitter
from gazette_core.message.structs import StructMessage, decoder, field_error

CONTENT_TYPE_LABEL = "content-type"
JSON_LINES = "application/x-ndjson"
CSV = CSVFraming.content_type
PROTOBUF_FIXED = ProtoFixedFraming.content_type


class Framing(Protocol):
    content_type: str

    def marshal(self, msg: Message) -> bytes: ...

    def unmarshal(self, record: bytes, msg: Message) -> Message: ...

    def splitter(self) -> Splitter: ...


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON value")


_DECODER = json.JSONDecoder(parse_constant=_not_json)
_ENCODER = msgspec.json.Encoder()


def _stdlib_loads(record: bytes) -> Any:
    """The reference decoding: its errors are the ones reported.

    JSON on the wire is UTF-8 (given bytes, json.loads would also guess UTF-16
    and UTF-32), and NaN and the infinities are not JSON: Go refuses both.
    """
    return _DECODER.decode(record.decode("utf-8"))


def loads(record: bytes) -> Any:
    """The JSON value of `record`, decoded in C; what msgspec refuses is decoded (or
    refused, with its error) exactly as the standard library does."""
    try:
        return msgspec.json.decode(record)
    except msgspec.MsgspecError:
        return _stdlib_loads(record)


def _check_finite(doc: Any, out: bytes) -> None:
    """Refuse NaN and the infinities, which msgspec writes as null: Go's readers (and ours)
    refuse them. Only a document with a null can hold one."""
    if b"null" in out:
        json.dumps(doc, allow_nan=False)


def decode_struct(cls: type, record: bytes) -> Any:
    """`record` decoded into struct type `cls`, with JSONFraming's rules and errors."""
    if not record.isascii():
        record.decode("utf-8")  # msgspec does not look into the values of unknown keys
    try:
        return decoder(cls).decode(record)
    except msgspec.ValidationError as err:
        raise field_error(cls, record, err) from None
    except msgspec.DecodeError as err:
        _stdlib_loads(record)  # raises the error JSONMessage decoding would
        raise ValueError(f"JSON message: {err}") from None


class JSONFraming:
    """One compact JSON object per line: StructMessage, or a JSONMessage's to/load_json_dict."""

    content_type = JSON_LINES

    def marshal(self, msg: Message) -> bytes:
        if isinstance(msg, StructMessage):
            out = _ENCODER.encode(msg)
            if b"null" in out:
                _check_finite(msgspec.to_builtins(msg), out)
            return out + b"\n"
        doc = msg.to_json_dict()  # type: ignore[attr-defined]
        try:
            out = _ENCODER.encode(doc)
        except (TypeError, ValueError):  # said as the standard library says it
            return json.dumps(doc, separators=(",", ":"), allow_nan=False).encode() + b"\n"
        _check_finite(doc, out)
        return out + b"\n"

    def unmarshal(self, record: bytes, msg: Message) -> Message:
        if isinstance(msg, StructMessage):
            decoded: Message = decode_struct(type(msg), record)
            return decoded
        doc = loads(record)
        if not isinstance(doc, dict):
            raise ValueError(f"JSON message is not an object: {record[:80]!r}")
        msg.load_json_dict(doc)  # type: ignore[attr-defined]
        return msg

    def splitter(self) -> Splitter:
        return LineSplitter()


_FRAMINGS: dict[str, Framing] = {
    JSON_LINES: JSONFraming(), CSV: CSVFraming(), PROTOBUF_FIXED: ProtoFixedFraming(),
}


def framing_for(content_type: str) -> Framing:
    """The framing of a content type; ValueError naming the type if it has none."""
    # Parameters such as "; charset=utf-8" do not change the framing.
    framing = _FRAMINGS.get(content_type.split(";", 1)[0].strip().lower())
    if framing is None:
        raise ValueError(
            f"no message framing for content-type {content_type!r} "
            f"(supported: {', '.join(sorted(_FRAMINGS))})"
        )
    return framing


def content_type(spec: pb.JournalSpec) -> str:
    """The journal's `content-type` label, or "" when it has none."""
    for label in spec.labels.labels:
        if label.name == CONTENT_TYPE_LABEL:
            return str(label.value)
    return ""


def journal_framing(spec: pb.JournalSpec) -> Framing:
    """The framing a journal's `content-type` label names; ValueError if none fits."""
    kind = content_type(spec)
    if not kind:
        raise ValueError(f"journal {spec.name!r} has no {CONTENT_TYPE_LABEL!r} label "
                         "to choose a message framing")
    try:
        return framing_for(kind)
    except ValueError as err:
        raise ValueError(f"journal {spec.name!r}: {err}") from None
