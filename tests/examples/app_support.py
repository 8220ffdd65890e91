"""Driving an example app by hand: a shard stand-in, a publisher that records, and a
recorded store on a real broker, for tests of an app's logic below the framework."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, TypeVar

from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.consumer.recoverylog.author import new_author
from gazette_core.consumer.recoverylog.player import Player
from gazette_core.consumer.recoverylog.recorder import Recorder
from gazette_core.message.interfaces import Envelope, Message
from gazette_core.message.uuid import Flags, build_uuid, new_producer_id
from gazette_core.testing.broker import journal_spec
from tests.broker.support import create

RECOVERY_LOG = "content-type", "application/x-gazette-recoverylog"


@dataclass
class StandInShard:
    """What the example apps use of a Shard: its id and spec."""

    spec: cpb.ShardSpec

    @property
    def id(self) -> str:
        return self.spec.id


@dataclass
class RecordingPublisher:
    """Keeps what the app publishes instead of appending it."""

    committed: list[Message] = field(default_factory=list)
    uncommitted: list[Message] = field(default_factory=list)

    def publish_committed(self, mapping: Any, msg: Message) -> None:
        mapping(msg)  # the mapping must accept the message
        self.committed.append(msg)

    def publish_uncommitted(self, mapping: Any, msg: Message) -> None:
        mapping(msg)
        self.uncommitted.append(msg)


_offsets = itertools.count(0, 100)


def envelope(journal: str, msg: Message) -> Envelope:
    begin = next(_offsets)
    return Envelope(journal=journal, begin=begin, end=begin + 100, message=msg)


M = TypeVar("M", bound=Message)


def ack(msg: M) -> M:
    msg.set_uuid(build_uuid(new_producer_id(), 1 << 60, Flags.ACK_TXN))
    return msg


async def new_log(stub: Any, log: str) -> None:
    await create(stub, journal_spec(log, labels=(RECOVERY_LOG,)))


async def start_recorder(stub: Any, log: str, directory: str) -> Recorder:
    """A recorder over a fresh copy of `log` played into `directory` (handed off to it)."""
    author = new_author()
    player = Player()
    player.inject_handoff(author)
    resolved = await player.play(rpb.FSMHints(log=log), directory, stub)
    return await Recorder.start(log, resolved.fsm, author, resolved.directory, stub)

