"""Stream-sum end to end on the consumer harness: chunker, summers, verified sums."""

from __future__ import annotations

import asyncio

from examples.stream_sum import chunker
from examples.stream_sum.messages import Sum
from examples.stream_sum.names import SUMS_JOURNAL
from examples.stream_sum.summer import Summer
from gazette_core.testing.consumer import consumer_harness
from tests.examples.stack_support import install


async def test_every_stream_sum_arrives_once_and_right() -> None:
    async with consumer_harness(Summer, consumers=2) as h:
        shards = await install(h, "stream_sum")
        for spec in shards:
            await h.wait_primary(spec.id)
        summary = await chunker.run(h.journals, chunker.Options(streams=60, max_chunks=12,
                                                                timeout=30, seed=1))
        assert summary == {"streams": 60, "verified": 60, "wrong": 0, "duplicated": 0,
                           "missing": 0}
        assert len(await h.committed_messages(SUMS_JOURNAL, lambda _: Sum())) == 60


async def test_sums_stay_exactly_once_across_crashed_primaries() -> None:
    async with consumer_harness(Summer, consumers=2) as h:
        shards = await install(h, "stream_sum")
        for spec in shards:
            await h.wait_primary(spec.id)
        run = asyncio.create_task(chunker.run(h.journals, chunker.Options(
            streams=80, max_chunks=12, rate=400, timeout=40, seed=2)))
        for victim in ("chunks-part-000", "chunks-part-005"):  # one SQLite, one JSON store
            await asyncio.sleep(0.6)
            crashed = await h.crash(victim)
            assert (await h.wait_primary(victim)) is not crashed
        summary = await run
        assert summary == {"streams": 80, "verified": 80, "wrong": 0, "duplicated": 0,
                           "missing": 0}
