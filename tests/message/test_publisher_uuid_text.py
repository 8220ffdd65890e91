"""The publisher's UUID text, formatted from the clock without uuid.UUID, is str(build_uuid)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from uuid import UUID

import pytest

from gazette_core.broker.client.append_service import AppendService
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.message.framing import framing_for
from gazette_core.message.interfaces import JSONMessage, Message
from gazette_core.message.publisher import TEXT_UUID_SETTERS, Publisher
from gazette_core.message.uuid import GREGORIAN_OFFSET, TICK, Clock, Flags, UUIDText, build_uuid
from gazette_core.testing.broker import journal_spec
from tests.broker.support import content, create
from tests.message.support import A, Note

# A clock 5 us before the timestamp's low 32 bits wrap: the groups after the first change.
WRAP = ((GREGORIAN_OFFSET | 0xFFFFFFFF) - 50) << 4


@pytest.mark.parametrize("flags", [0, 1, 2, 0x3FF])
def test_text_is_str_of_build_uuid_for_every_counter_and_across_a_wrap(flags: int) -> None:
    text = UUIDText(A)
    clocks = [WRAP + i * TICK + counter for i in range(10) for counter in (0, 1, 7, 15)]
    rng = random.Random(7)
    clocks += [rng.randrange(1 << 64) for _ in range(200)]  # high groups jumping about
    clocks += [WRAP, WRAP + 20 * TICK, WRAP]  # back to an earlier high group
    for clock in clocks:
        assert text.format(clock, flags) == str(build_uuid(A, clock, flags)), hex(clock)


@dataclass
class Spy(JSONMessage):
    """A JSON message with its own set_uuid, which must still be called."""

    seen: str = ""

    def set_uuid(self, u: UUID) -> None:
        self.seen = "set_uuid"
        self.uuid = str(u)


JOURNAL = "uuid-text/one"


async def test_published_uuids_are_those_of_the_clock_across_a_wrap(
    stub: pb_grpc.JournalStub,
) -> None:
    await create(stub, journal_spec(JOURNAL, labels=(("content-type", "application/x-ndjson"),)))
    route = (JOURNAL, framing_for("application/x-ndjson"))
    clock = Clock(WRAP + 3)  # a shard's clock is only ticked: its counter bits stay
    async with AppendService(stub) as service:  # type: ignore[arg-type]
        publisher = Publisher(service, clock=clock, producer_id=A)
        messages: list[Message] = []
        for i in range(60):
            msg = Spy(seen="") if i % 3 == 0 else Note(text=str(i))
            publish = publisher.publish_uncommitted if i % 2 else publisher.publish_committed
            await publish(lambda _: route, msg)  # type: ignore[arg-type,return-value]
            messages.append(msg)
    expected = [str(build_uuid(A, WRAP + 3 + (i + 1) * TICK,
                               Flags.CONTINUE_TXN if i % 2 else Flags.OUTSIDE_TXN))
                for i in range(60)]
    assert [m.uuid for m in messages] == expected  # type: ignore[attr-defined]
    assert all(m.seen == "set_uuid" for m in messages if isinstance(m, Spy))
    written = (await content(stub, JOURNAL)).splitlines()
    assert [line.split(b'"')[3].decode() for line in written] == expected
    assert Spy.set_uuid not in TEXT_UUID_SETTERS
