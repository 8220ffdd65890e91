"""Putting an example's journals and shards onto a consumer harness."""

from __future__ import annotations

from examples.specs import example_journals, example_shards
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.testing.consumer import ConsumerHarness

__all__ = ["example_journals", "example_shards", "install"]


async def install(harness: ConsumerHarness, example: str) -> list[cpb.ShardSpec]:
    """The example's journals (incl. recovery logs) and shards; the shards."""
    await harness.apply_journals(example_journals(example))
    shards = example_shards(example)
    await harness.create_shards(*shards, create_logs=False)
    return shards
