"""is_acknowledgement says what get_flags(get_uuid()) == ACK_TXN says, for every message kind."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest

from gazette_core.message.acks import is_acknowledgement
from gazette_core.message.interfaces import Envelope, JSONMessage, JSONRecord, Message
from gazette_core.message.structs import StructMessage
from gazette_core.message.uuid import Flags, build_uuid, get_flags, new_producer_id


class Tick(StructMessage):
    key: str = ""


@dataclass
class Click(JSONMessage):
    page: str = ""


class Elsewhere(StructMessage):
    """Keeps its UUID text under another name: get_uuid is its own."""

    other: str = ""

    def get_uuid(self) -> uuid.UUID:
        return uuid.UUID(self.other) if self.other else uuid.UUID(int=0)


def _uuids() -> list[str]:
    producer = new_producer_id()
    texts = [str(build_uuid(producer, 12345 + i, flags)) for i, flags in
             enumerate((Flags.OUTSIDE_TXN, Flags.CONTINUE_TXN, Flags.ACK_TXN))]
    return [*texts, *(t.upper() for t in texts), ""]


def _messages(text: str) -> list[Message]:
    record = JSONRecord()
    record.uuid = uuid.UUID(text) if text else uuid.UUID(int=0)
    return [Tick(uuid=text, key="k"), Click(uuid=text), record,
            Elsewhere(uuid=_uuids()[2], other=text)]  # its `uuid` field is not its UUID


@pytest.mark.parametrize("text", _uuids())
def test_is_acknowledgement_agrees_with_the_flags_of_the_uuid(text: str) -> None:
    for msg in _messages(text):
        expected = get_flags(msg.get_uuid()) == Flags.ACK_TXN
        assert is_acknowledgement(Envelope("a/journal", 0, 1, msg)) is expected, msg
