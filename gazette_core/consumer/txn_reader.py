"""The read channel of a primary: one read-uncommitted iterator per source journal.

Each source is read from max(checkpoint read_through, min_offset) by its own
task, which puts envelopes into one bounded queue (read_channel_size) that
the transaction loop drains. A failed read puts its error into the queue, so
the loop fails with it in order. Nothing a reader raises, SystemExit from an
application's decoding included, leaves its task unhandled.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from gazette_core.consumer.app import AppError, ours
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.message.reader import read_uncommitted
from gazette_core.tasks import cancel_and_wait

log = logging.getLogger(__name__)

DEFAULT_CHANNEL_SIZE = 1 << 13


def start_offsets(spec: cpb.ShardSpec, checkpoint: cpb.Checkpoint) -> dict[str, int]:
    """Where each source is read from: the checkpoint's read_through, at least min_offset."""
    offsets: dict[str, int] = {}
    for source in spec.sources:
        committed = checkpoint.sources[source.journal].read_through \
            if source.journal in checkpoint.sources else 0
        offsets[source.journal] = max(committed, source.min_offset)
    return offsets


class ReadChannel:
    """Envelopes of every source, interleaved in arrival order, in `queue`."""

    def __init__(self, client: Any, new_message: Callable[..., Any], size: int = 0) -> None:
        self._client = client
        self._new_message = new_message
        self.queue: asyncio.Queue[Any] = asyncio.Queue(size or DEFAULT_CHANNEL_SIZE)
        self._tasks: list[asyncio.Task[None]] = []

    def start(self, offsets: dict[str, int]) -> None:
        loop = asyncio.get_running_loop()
        for journal, offset in sorted(offsets.items()):
            self._tasks.append(loop.create_task(self._pump(journal, offset),
                                                name=f"read {journal}"))

    async def _pump(self, journal: str, offset: int) -> None:
        try:
            async for envelope in read_uncommitted(self._client, journal, offset,
                                                   self._new_message):
                await self.queue.put(envelope)
        except BaseException as err:
            if ours(err):
                raise
            log.warning("reading source %r failed: %s", journal, err)
            await self.queue.put(err if isinstance(err, Exception) else AppError("read", err))

    async def stop(self) -> None:
        for task in self._tasks:
            await cancel_and_wait(task)
        self._tasks.clear()
