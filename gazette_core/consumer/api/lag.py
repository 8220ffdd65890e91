"""How far shards are behind their sources: each primary's read-through against write heads.

A shard's lag, per source journal, is the journal's write head minus the
offset its primary has read through (Stat). During a fail-over some shards
cannot be asked: their primary is unreachable (killed, not yet replaced) or
there is none yet. Their lag is reported unknown, with why, and the others
are measured all the same; each unreachable consumer is named once with the
shards it is primary of.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gazette_core.broker.client.journals import fetch_write_head
from gazette_core.consumer.api.client import stat_shard
from gazette_core.consumer.api.errors import ShardStatusError
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.errors import UnavailableError

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

UNREACHABLE = "unreachable"  # the shard's primary did not answer
NO_PRIMARY = "no primary"  # the shard has no primary ready to answer (a hand-off)


@dataclass
class Unreachable:
    """A consumer that could not be asked: primary of `shards`."""

    consumer: str  # its member suffix
    endpoint: str
    reason: str
    shards: list[str] = field(default_factory=list)


@dataclass
class Lags:
    """Bytes behind per shard and source; shards whose lag is unknown, and why."""

    known: dict[str, dict[str, int]] = field(default_factory=dict)
    unknown: dict[str, str] = field(default_factory=dict)  # shard id -> UNREACHABLE, NO_PRIMARY
    unreachable: list[Unreachable] = field(default_factory=list)

    def total(self) -> int:
        """The sum over measured shards (a lower bound when some are unknown)."""
        return sum(sum(by_source.values()) for by_source in self.known.values())


async def measure(shards: Any, brokers: JournalAsyncStub, listed: cpb.ListResponse) -> Lags:
    """The lags of the `listed` shards: `shards` answers Stat, `brokers` write heads.

    Stats go out at once, so an unreachable primary costs its timeout once,
    not once per shard.
    """
    stats = await asyncio.gather(*(stat_shard(shards, s.spec.id) for s in listed.shards),
                                 return_exceptions=True)
    lags = Lags()
    heads: dict[str, int] = {}
    for shard, stat in zip(listed.shards, stats, strict=True):
        shard_id = shard.spec.id
        if isinstance(stat, BaseException):
            lags.unknown[shard_id] = _unknown(lags, shard, stat)
            continue
        # A source the shard has read nothing of yet is missing from Stat: it is
        # behind by all of its content past min_offset.
        offsets = {s.journal: s.min_offset for s in shard.spec.sources}
        offsets.update(stat.read_through)
        lags.known[shard_id] = {}
        for journal, offset in sorted(offsets.items()):
            if journal not in heads:
                heads[journal] = await fetch_write_head(brokers, journal)
            lags.known[shard_id][journal] = max(heads[journal] - offset, 0)
    return lags


def _unknown(lags: Lags, shard: cpb.ListResponse.Shard, error: BaseException) -> str:
    """Why the shard's Stat failed with `error`; re-raised unless the cluster is moving."""
    if isinstance(error, ShardStatusError) and error.retriable:
        return NO_PRIMARY
    if not isinstance(error, UnavailableError):
        raise error
    route = shard.route
    consumer, endpoint = "", ""
    if 0 <= route.primary < len(route.members):
        consumer = route.members[route.primary].suffix
        endpoint = route.endpoints[route.primary] if route.primary < len(route.endpoints) else ""
    for seen in lags.unreachable:
        if (seen.consumer, seen.endpoint) == (consumer, endpoint):
            seen.shards.append(shard.spec.id)
            break
    else:
        lags.unreachable.append(Unreachable(consumer, endpoint, str(error), [shard.spec.id]))
    return UNREACHABLE
