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
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gazette_core.message.framing import Framing
from gazette_core.message.interfaces import Message
from gazette_core.message.uuid import Clock, Flags, build_uuid, new_producer_id

if TYPE_CHECKING:
    from gazette_core.broker.client.append_service import AppendService, AsyncAppend
    from gazette_core.message.mapping import Mapping


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
        # journal -> (framing, acknowledgement); dicts keep first-publish order.
        self._intents: dict[str, tuple[Framing, Message]] = {}

    def publish_committed(self, mapping: Mapping, msg: Message) -> AsyncAppend:
        """Append `msg` committed on its own; await the result for its batch's commit."""
        journal, framing = self._map(mapping, msg)
        return self._append(journal, framing, msg, Flags.OUTSIDE_TXN)

    def publish_uncommitted(self, mapping: Mapping, msg: Message) -> AsyncAppend:
        """Append `msg` pending until this producer acknowledges its journal."""
        journal, framing = self._map(mapping, msg)
        if journal not in self._intents:
            self._intents[journal] = (framing, msg.new_acknowledgement(journal))
        return self._append(journal, framing, msg, Flags.CONTINUE_TXN)

    def build_ack_intents(self) -> list[tuple[str, bytes]]:
        """Framed ACKs of every journal published to uncommitted since the last call."""
        intents = []
        for journal, (framing, ack) in self._intents.items():
            ack.set_uuid(build_uuid(self.producer_id, self.clock.tick(), Flags.ACK_TXN))
            intents.append((journal, framing.marshal(ack)))
        self._intents.clear()
        return intents

    @staticmethod
    def _map(mapping: Mapping, msg: Message) -> tuple[str, Framing]:
        validate = getattr(msg, "validate", None)
        if callable(validate):
            validate()
        return mapping(msg)

    def _append(self, journal: str, framing: Framing, msg: Message, flags: int) -> AsyncAppend:
        if self._own_clock:
            self.clock.update()
        msg.set_uuid(build_uuid(self.producer_id, self.clock.tick(), flags))
        return self._appender.enqueue(journal, framing.marshal(msg))
