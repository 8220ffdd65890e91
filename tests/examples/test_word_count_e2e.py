"""Word-count end to end: publish through one consumer, query through every consumer."""

from __future__ import annotations

from collections import Counter

import grpc
import pytest

from examples.word_count import api, ngrams
from examples.word_count.counter import Counter as CounterApp
from gazette_core.testing.consumer import consumer_harness
from tests.examples.stack_support import install

TEXTS = ["The cat sat on the mat.", "The dog sat on the cat!", "A cat is not a dog; the end."]


def expected(prefix: str) -> dict[str, int]:
    total: Counter[str] = Counter()
    for text in TEXTS:
        total.update(ngrams.count_ngrams(text))
    return {g: n for g, n in total.items() if ngrams.matches(g, prefix)}


async def test_counts_are_queried_from_the_owning_shard_through_any_consumer() -> None:
    async with consumer_harness(CounterApp, consumers=2) as h:
        shards = await install(h, "word_count")
        primaries = {s.id: await h.wait_primary(s.id) for s in shards}
        assert len(set(map(id, primaries.values()))) == 2  # both consumers own shards
        channels = [grpc.aio.insecure_channel(c.endpoint.split("://")[1]) for c in h.live]
        try:
            for text in TEXTS:
                assert await api.publish(channels[0], text) > 0
            for spec in shards:
                await h.wait_consumed(spec.id)
            for prefix in ("the", "the c", "cat", "a", "dog sat", "sat on the"):
                want = expected(prefix)
                for channel in channels:  # one of them forwards to the primary
                    assert await api.query(channel, prefix) == want, prefix
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await api.query(channels[0], "!!")
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        finally:
            for channel in channels:
                await channel.close()
