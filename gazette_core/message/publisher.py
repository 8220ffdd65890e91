"""Publisher: stamp messages with UUIDs and append them to the journals a mapping picks.

`publish_committed` writes a message that is committed on its own
(OUTSIDE_TXN). `publish_uncommitted` writes a pending one (CONTINUE_TXN) and
records an ACK intent for its journal; readers hold pending messages back
until an ACK_TXN of the same producer commits them. `build_ack_intents`
turns the intents into framed ACKs (one per journal, in first-publish order);
the consumer framework calls it at commit and appends them after the commit
barrier, so applications do not call it themselves.

The clock is ticked and the UUID stamped right before the message is queued
on the AppendService. Both happen without yielding to the event loop, so
within each journal the clocks increase in append order.

Publishing is on the hot path of producers, so a message costs what cannot
be avoided: the mapping, the marshal and a buffer append. Messages that keep
their UUID as text (`JSONMessage` and any type whose `set_uuid` is listed in
TEXT_UUID_SETTERS) get the canonical text straight from the clock, without a
`uuid.UUID`; other types get a `uuid.UUID` through their `set_uuid`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gazette_core.message.framing import Framing
from gazette_core.message.interfaces import JSONMessage, Message
from gazette_core.message.structs import StructMessage
from gazette_core.message.uuid import (
    GREGORIAN_OFFSET,
    TICK,
    Clock,
    Flags,
    UUIDText,
    build_uuid,
    new_producer_id,
)

if TYPE_CHECKING:
    from gazette_core.broker.client.append_service import AppendService, AsyncAppend
    from gazette_core.message.mapping import Mapping

# `set_uuid` implementations that amount to `self.uuid = str(u)`: a message whose
# type uses one of them has its `uuid` attribute set to the text directly.
TEXT_UUID_SETTERS: set[Callable[..., Any]] = {JSONMessage.set_uuid, StructMessage.set_uuid}

_time_ns = time.time_ns
# Plain ints: an IntEnum member costs an attribute lookup per message.
_OUTSIDE_TXN = int(Flags.OUTSIDE_TXN)
_CONTINUE_TXN = int(Flags.CONTINUE_TXN)


class _Kind:
    """What publishing a message of one type involves, looked up once per type."""

    __slots__ = ("text", "validate")

    def __init__(self, cls: type) -> None:
        self.validate = callable(getattr(cls, "validate", None))
        self.text = getattr(cls, "set_uuid", None) in TEXT_UUID_SETTERS


class Publisher:
    """Publishes through `appender` with its own producer ID and `clock`.

    Without a `clock` the publisher keeps its own and moves it to the wall
    time before each message; a given clock (a shard's) is only ticked, as
    its owner sets it.
    """

    def __init__(self, appender: AppendService, clock: Clock | None = None,
                 producer_id: bytes | None = None) -> None:
        self._appender = appender
        self._own_clock = clock is None
        self.clock = Clock() if clock is None else clock
        self.producer_id = new_producer_id() if producer_id is None else producer_id
        if len(self.producer_id) != 6:
            raise ValueError(f"producer ID must be 6 bytes, got {len(self.producer_id)}")
        self._text = UUIDText(self.producer_id)
        self._kinds: dict[type, _Kind] = {}
        # journal -> (framing, acknowledgement); dicts keep first-publish order.
        self._intents: dict[str, tuple[Framing, Message]] = {}

    def publish_committed(self, mapping: Mapping, msg: Message) -> AsyncAppend:
        """Append `msg` committed on its own; await the result for its batch's commit."""
        kind = self._kinds.get(type(msg)) or self._kind(msg)
        if kind.validate:
            msg.validate()  # type: ignore[attr-defined]
        journal, framing = mapping(msg)
        self._stamp(msg, kind, _OUTSIDE_TXN)
        return self._appender.enqueue(journal, framing.marshal(msg))

    def publish_uncommitted(self, mapping: Mapping, msg: Message) -> AsyncAppend:
        """Append `msg` pending until this producer acknowledges its journal."""
        kind = self._kinds.get(type(msg)) or self._kind(msg)
        if kind.validate:
            msg.validate()  # type: ignore[attr-defined]
        journal, framing = mapping(msg)
        if journal not in self._intents:
            self._intents[journal] = (framing, msg.new_acknowledgement(journal))
        self._stamp(msg, kind, _CONTINUE_TXN)
        return self._appender.enqueue(journal, framing.marshal(msg))

    def build_ack_intents(self) -> list[tuple[str, bytes]]:
        """Framed ACKs of every journal published to uncommitted since the last call."""
        intents = []
        for journal, (framing, ack) in self._intents.items():
            ack.set_uuid(build_uuid(self.producer_id, self.clock.tick(), Flags.ACK_TXN))
            intents.append((journal, framing.marshal(ack)))
        self._intents.clear()
        return intents

    def _kind(self, msg: Message) -> _Kind:
        kind = self._kinds[type(msg)] = _Kind(type(msg))
        return kind

    def _stamp(self, msg: Message, kind: _Kind, flags: int) -> None:
        """Tick the clock and set the message's UUID from it."""
        clock = self.clock
        value = clock.value
        if self._own_clock:  # Clock.update(), inlined: it is per message.
            wall = (_time_ns() // 100 + GREGORIAN_OFFSET) << 4
            if wall > value:
                value = wall
        clock.value = value = value + TICK
        if kind.text:
            msg.uuid = self._text.format(value, flags)  # type: ignore[attr-defined]
        else:
            msg.set_uuid(build_uuid(self.producer_id, value, flags))
