"""Gauges sampled off the transaction path: read lag of primaries, playback of replicas.

Every `interval` seconds the sampler sets, for each shard replica served
here, either its recovery-log playback progress (while it backfills or
stands by) or, for a primary, each source journal's read lag: the write
head (a metadata-only read at the broker) minus the shard's read_through.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from gazette_core.broker.client.journals import fetch_write_head
from gazette_core.consumer import metrics
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.errors import GazetteError
from gazette_core.tasks import BackgroundTask

if TYPE_CHECKING:
    from gazette_core.consumer.service import ConsumerService

log = logging.getLogger(__name__)

INTERVAL_S = 5.0


class ShardGauges:
    """Sets the read-lag and recovery gauges of one consumer process's shards."""

    def __init__(self, service: ConsumerService, interval: float = INTERVAL_S) -> None:
        self.service = service
        self.interval = interval
        self._task = BackgroundTask("shard gauges")
        self._seen: dict[str, list[str]] = {}

    def start(self) -> None:
        self._task.start(self._run)

    async def stop(self) -> None:
        await self._task.stop()

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.measure()
            except GazetteError as exc:
                log.debug("sampling shard gauges failed: %s", exc)

    async def measure(self) -> None:
        """Sample every replica served here now."""
        current: dict[str, list[str]] = {}
        for shard, replica in list(self.service.resolver.replicas.items()):
            current.setdefault(shard, [])
            if replica.status.code != cpb.ReplicaStatus.PRIMARY:
                playback = replica.playback
                if playback is not None:
                    metrics.recovery(shard, playback.offset,
                                     max(playback.target_head, playback.offset))
                continue
            metrics.forget_recovery(shard)  # recovered: its playback figures are history
            read_through = replica.shard.progress()[0]
            sources = [s.journal for s in replica.shard.spec.sources]
            current[shard] = sources
            for journal in sources:
                stub = self.service.journals.stub_for(journal, primary=False)
                head = await fetch_write_head(stub, journal)
                metrics.READ_LAG.cell(shard, journal).value = max(
                    0, head - read_through.get(journal, 0))
        for shard, journals in self._seen.items():
            if shard not in current:
                metrics.forget(shard, journals)
        self._seen = current
