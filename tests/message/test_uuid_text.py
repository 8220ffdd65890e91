"""parse_text and format_text agree with uuid.UUID, get_parts and build_uuid: the same parts,
the same texts accepted and the same refused; message_parts agrees with get_uuid()."""

from __future__ import annotations

import random
import uuid

import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.message.interfaces import (
    CSVRecord,
    JSONRecord,
    Message,
    ProtoMessage,
    message_parts,
)
from gazette_core.message.structs import StructMessage
from gazette_core.message.uuid import (
    ZERO_PARTS,
    build_uuid,
    format_text,
    get_parts,
    new_producer_id,
    parse_text,
)
from tests.message.support import Note


class Tick(StructMessage):
    n: int = 0


def reference(text: str) -> tuple[int, int, bytes]:
    return get_parts(uuid.UUID(text)) if text else ZERO_PARTS


def test_random_uuids_format_and_parse_as_the_uuid_module_does() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        producer = new_producer_id()
        clock, flags = rng.getrandbits(rng.choice((4, 20, 64))), rng.getrandbits(10)
        text = format_text(producer, clock, flags)
        assert text == str(build_uuid(producer, clock, flags))
        assert parse_text(text) == parse_text(text.upper()) == reference(text)


CANONICAL = "2f7c0e3a-2d0f-11ee-8001-010203040506"


@pytest.mark.parametrize("text", [
    "", "00000000-0000-0000-0000-000000000000", CANONICAL.upper(),
    "{" + CANONICAL + "}", "urn:uuid:" + CANONICAL, CANONICAL.replace("-", ""),
    "----" + CANONICAL.replace("-", ""), "0x" + CANONICAL.replace("-", "")[2:],
    "2f7c0e3a2-d0f-11ee-8001-010203040506", "2f7c0e3a-2d0f-11ee-8001-01020304050 ",
    " f7c0e3a-2d0f-11ee-8001-010203040506", "2f7c0e3a-2d0f-11ee-8001-0102_3040506",
    "2f7c0e3a-2d0f-11ee-8001-01020304050\u0660",  # int() takes any Unicode digit
])
def test_other_spellings_the_uuid_module_accepts_give_its_parts(text: str) -> None:
    assert parse_text(text) == reference(text)


@pytest.mark.parametrize("text", [
    "nope", CANONICAL[:-1], CANONICAL + "0", CANONICAL.replace("2f", "2g"),
    CANONICAL.replace("-", " "), "2f7c0e3a-2d0f-11ee-8001-0102030405-6",
])
def test_texts_the_uuid_module_refuses_are_refused_alike(text: str) -> None:
    with pytest.raises(ValueError) as expected:
        uuid.UUID(text)
    with pytest.raises(ValueError) as got:
        parse_text(text)
    assert str(got.value) == str(expected.value)


def test_format_refuses_what_build_uuid_refuses() -> None:
    for producer, flags in ((b"12345", 0), (bytes(6), 0x400), (bytes(6), -1)):
        with pytest.raises(ValueError) as expected:
            build_uuid(producer, 1, flags)
        with pytest.raises(ValueError) as got:
            format_text(producer, 1, flags)
        assert str(got.value) == str(expected.value)


class Custom(Note):
    """A type whose own get_uuid() says its UUID: message_parts must ask it."""

    def get_uuid(self) -> uuid.UUID:
        return build_uuid(bytes(6), 160, 2)


def test_message_parts_are_those_of_get_uuid_for_every_built_in_type() -> None:
    u = build_uuid(new_producer_id(), 12345 << 4, 1)
    record = JSONRecord()
    record.set_uuid(u)
    messages: list[Message] = [
        Tick(uuid=str(u).upper()), Tick(), Note(uuid=str(u)), Note(), CSVRecord([str(u), "a"]),
        CSVRecord(), CSVRecord([""]), ProtoMessage(pb.Label(name=str(u)), "name"),
        ProtoMessage(pb.AppendRequest(content=u.bytes), "content"), record, JSONRecord(),
        Custom(uuid=str(u))]
    for msg in messages:
        assert message_parts(msg) == get_parts(msg.get_uuid()), msg
    for bad in (Note(uuid="nope"), CSVRecord(["nope"]), ProtoMessage(pb.Label(name="x"), "name")):
        with pytest.raises(ValueError, match="badly formed"):
            message_parts(bad)
