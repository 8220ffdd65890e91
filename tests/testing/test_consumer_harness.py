"""The consumer harness itself: a crash loses the open transaction, recovery redoes it;
committed messages read back bare, under a name of their own."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.store.interface import Store
from gazette_core.consumer.store.json_file import JSONFileStore
from gazette_core.message.framing import JSON_LINES, Framing, framing_for
from gazette_core.message.interfaces import Envelope, JSONMessage, Message
from gazette_core.message.uuid import Flags, get_flags
from gazette_core.testing.consumer import consumer_harness

SOURCE = "harness/clicks"


@dataclass
class Click(JSONMessage):
    uuid: str = ""
    user: str = ""


def to_source(_: Message) -> tuple[str, Framing]:
    return SOURCE, framing_for(JSON_LINES)


class Counting:
    """Counts clicks per user in a JSON store; `consumed` counts every delivery.

    With `hold`, no transaction gets past finalize_txn: they never commit.
    """

    def __init__(self, hold: bool = False) -> None:
        self.consumed = 0
        self.stores: dict[str, JSONFileStore] = {}
        self.hold = asyncio.Event() if hold else None

    async def new_store(self, shard: Any, recorder: Any) -> Store:
        store = await JSONFileStore.open(recorder.directory, recorder, initial_state={})
        self.stores[shard.id] = store
        return store

    def new_message(self, spec: pb.JournalSpec) -> Message:
        return Click()

    def consume_message(self, shard: Any, store: Any, env: Envelope, publisher: Any) -> None:
        msg = env.message
        assert isinstance(msg, Click)
        if get_flags(msg.get_uuid()) != Flags.ACK_TXN:
            self.consumed += 1
            store.state[msg.user] = store.state.get(msg.user, 0) + 1

    async def finalize_txn(self, shard: Any, store: Any, publisher: Any) -> None:
        if self.hold is not None:
            await self.hold.wait()


def first_holds() -> Callable[[], Counting]:
    apps = 0

    def new_app() -> Counting:
        nonlocal apps
        apps += 1
        return Counting(hold=apps == 1)
    return new_app


async def test_a_crashed_primary_loses_its_open_transaction_and_recovery_redoes_it() -> None:
    async with consumer_harness(first_holds()) as h:
        await h.create_journals(SOURCE)
        await h.create_shards(h.shard_spec("clicks-000", [SOURCE]))
        first = await h.wait_primary("clicks-000")
        await h.publish(to_source, Click(user="ann"), Click(user="bob"), Click(user="ann"))
        async with asyncio.timeout(10):
            while first.app.consumed < 3:  # consumed, but its commit is held back
                await asyncio.sleep(0.01)
        await h.crash("clicks-000")  # and a new consumer replaces it
        end = await h.publish(to_source, Click(user="cat"))
        await h.wait_consumed("clicks-000", {SOURCE: end})
        second = await h.wait_primary("clicks-000")
        assert second is not first and second.app.consumed == 4  # the lost three, again
        assert second.app.stores["clicks-000"].state == {"ann": 2, "bob": 1, "cat": 1}


async def test_committed_messages_are_bare_and_the_old_name_warns() -> None:
    async with consumer_harness(Counting, consumers=0) as h:
        await h.create_journals(SOURCE)
        await h.publish(to_source, Click(user="ann"), Click(user="bob"))
        end = await h.publish(to_source, Click(user="cat"))

        messages = await h.committed_messages(SOURCE, lambda _: Click())
        with pytest.warns(DeprecationWarning, match="use ConsumerHarness.committed_messages"):
            old = await h.read_committed(SOURCE, lambda _: Click())

        assert [(type(m), m.user) for m in messages] == [  # type: ignore[attr-defined]
            (Click, "ann"), (Click, "bob"), (Click, "cat")]
        assert old == messages
        assert await h.committed_messages(SOURCE, lambda _: Click(), offset=end) == []
