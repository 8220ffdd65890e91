"""Hoist: listed shards as a set whose `common` holds every value they all share.

There are only two levels: `common` is the intersection of all shards
(sources too, when every shard has the same ones) and each shard keeps what
differs. A single shard hoists nothing, so it reads as it is. Push-down of
the result gives back the listed specs.
"""

from __future__ import annotations

from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.shardspace.model import Entry, ShardSet
from gazette_core.consumer.shardspace.spec_fields import intersect, subtract
from gazette_core.errors import ValidationError


def hoist(shards: list[tuple[cpb.ShardSpec, int]]) -> ShardSet:
    """The hoisted set of `(spec, mod_revision)` pairs, in id order."""
    ordered = sorted(shards, key=lambda item: item[0].id)
    for index in range(1, len(ordered)):
        if ordered[index][0].id == ordered[index - 1][0].id:
            raise ValidationError("shards", f"shard {ordered[index][0].id!r} is listed "
                                            "more than once")
    common = intersect([spec for spec, _ in ordered]) if len(ordered) > 1 else cpb.ShardSpec()
    return ShardSet(common, [Entry(subtract(spec, common), revision=revision)
                             for spec, revision in ordered])
