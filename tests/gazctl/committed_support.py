"""Messages for the `journals read --committed` tests, written as a publisher writes them.

Records are built with the real UUID layout and framings; a producer's
transaction is its CONTINUE_TXN messages and the ACK_TXN that commits them.
A duplicate is the same record appended twice, which is what a retried
append leaves in a journal.
"""

from __future__ import annotations

from dataclasses import dataclass

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from gazette_core.message.framing import CSVFraming, JSONFraming, ProtoFixedFraming
from gazette_core.message.interfaces import CSVRecord, JSONMessage, ProtoMessage
from gazette_core.message.uuid import Flags, build_uuid

P = bytes([0x01, 0xAA, 0, 0, 0, 1])  # transactional
Q = bytes([0x01, 0xBB, 0, 0, 0, 2])  # committed on its own
R = bytes([0x01, 0xCC, 0, 0, 0, 3])  # transactional, one transaction rolled back
OUT, CONT, ACK = Flags.OUTSIDE_TXN, Flags.CONTINUE_TXN, Flags.ACK_TXN
CLOCK = 0x1F0000000000000 << 4  # any clock; messages tick from it


@dataclass
class Event(JSONMessage):
    uuid: str = ""
    text: str = ""


def json_record(producer: bytes, tick: int, flags: int, text: str = "") -> bytes:
    msg = Event(text=text)
    msg.set_uuid(build_uuid(producer, CLOCK + tick * 160, flags))
    return JSONFraming().marshal(msg)


def csv_record(producer: bytes, tick: int, flags: int, *fields: str) -> bytes:
    row = CSVRecord(["", *fields])
    row.set_uuid(build_uuid(producer, CLOCK + tick * 160, flags))
    return CSVFraming().marshal(row)


def _event_class() -> type:
    """A generated protobuf class with a string `uuid`, as protoc would give."""
    proto = descriptor_pb2.FileDescriptorProto(name="tests/gazctl/committed_event.proto",
                                               package="gazctl_tests", syntax="proto3")
    event = proto.message_type.add(name="ProtoEvent")
    event.field.add(name="uuid", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                    label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    event.field.add(name="text", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                    label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.Default()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("gazctl_tests.ProtoEvent"))


ProtoEvent = _event_class()


def proto_record(producer: bytes, tick: int, flags: int, text: str = "") -> bytes:
    msg = ProtoMessage(ProtoEvent(text=text))
    msg.set_uuid(build_uuid(producer, CLOCK + tick * 160, flags))
    return ProtoFixedFraming().marshal(msg)
