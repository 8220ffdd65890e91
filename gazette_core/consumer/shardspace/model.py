"""A shard set: a partial `common` ShardSpec and the shards that inherit from it."""

from __future__ import annotations

from dataclasses import dataclass, field

from gazette_core.consumer.protocol import consumer_pb2 as cpb


@dataclass
class Entry:
    """One shard of a set: its own (partial) spec and the set's keys around it.

    `revision` is the expected mod revision (0 creates, -1 ignores it);
    `comment` is free text kept for the reader.
    """

    spec: cpb.ShardSpec
    delete: bool = False
    revision: int = 0
    comment: str | None = None


@dataclass
class ShardSet:
    common: cpb.ShardSpec = field(default_factory=cpb.ShardSpec)
    shards: list[Entry] = field(default_factory=list)
