"""Builders for message tests: a JSON message type and journals of envelopes."""

from __future__ import annotations

from dataclasses import dataclass, field

from gazette_core.message.interfaces import Envelope, JSONMessage
from gazette_core.message.sequencer import Sequencer
from gazette_core.message.uuid import Flags, build_uuid

A = bytes([0x01, 0xAA, 0, 0, 0, 1])
B = bytes([0x01, 0xBB, 0, 0, 0, 2])
OUT, CONT, ACK = Flags.OUTSIDE_TXN, Flags.CONTINUE_TXN, Flags.ACK_TXN


@dataclass
class Note(JSONMessage):
    text: str = ""
    n: int = 0


@dataclass
class Log:
    """A journal being written: each message takes 10 bytes of offsets."""

    journal: str = "a/journal"
    offset: int = 100
    envelopes: list[Envelope] = field(default_factory=list)

    def add(self, producer: bytes, clock: int, flags: int, text: str = "") -> Envelope:
        msg = Note(text=text or f"{producer.hex()[:4]}@{clock}")
        msg.set_uuid(build_uuid(producer, clock, flags))
        env = Envelope(self.journal, self.offset, self.offset + 10, msg)
        self.offset += 10
        self.envelopes.append(env)
        return env

    def between(self, begin: int, end: int) -> list[Envelope]:
        return [e for e in self.envelopes if begin <= e.begin and e.end <= end]


async def drain(seq: Sequencer) -> list[Envelope]:
    """Every envelope step() hands out for the sequence just queued."""
    out = []
    while await seq.step():
        assert seq.dequeued is not None
        out.append(seq.dequeued)
    return out


def texts(envs: list[Envelope]) -> list[str]:
    return [e.message.text for e in envs]  # type: ignore[attr-defined]
