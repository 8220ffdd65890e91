"""The read channel of a primary: one read-uncommitted iterator per source journal.

Each source is read from max(checkpoint read_through, min_offset) by its own
task, which hands the envelopes of each read chunk over as one list: the
transaction loop takes a whole chunk at a time, so a message costs no queue
operation or task switch of its own. The channel holds about
read_channel_size envelopes at most (a reader waits while it is full; the
chunk that goes past the bound is still put whole). A failed read puts its error into
the channel, so the loop fails with it in order. Nothing a reader raises,
SystemExit from an application's decoding included, leaves its task unhandled.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from gazette_core.consumer.app import AppError, ours
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.message.interfaces import Envelope
from gazette_core.message.reader import read_uncommitted_batches
from gazette_core.tasks import cancel_and_wait

log = logging.getLogger(__name__)

DEFAULT_CHANNEL_SIZE = 1 << 13

Item = list[Envelope] | Exception


def start_offsets(spec: cpb.ShardSpec, checkpoint: cpb.Checkpoint) -> dict[str, int]:
    """Where each source is read from: the checkpoint's read_through, at least min_offset."""
    offsets: dict[str, int] = {}
    for source in spec.sources:
        committed = checkpoint.sources[source.journal].read_through \
            if source.journal in checkpoint.sources else 0
        offsets[source.journal] = max(committed, source.min_offset)
    return offsets


def wake(waiter: asyncio.Future[Any] | None) -> None:
    if waiter is not None and not waiter.done():
        waiter.set_result(None)


class ReadChannel:
    """Chunks of envelopes of every source, in arrival order, and read errors, in `queue`.

    The queue itself is unbounded: the readers wait for room (fewer than `size`
    envelopes held) before each put, and whoever takes an item from the queue
    hands it to `taken()`, which makes the room.
    """

    def __init__(self, client: Any, new_message: Callable[..., Any], size: int = 0) -> None:
        self._client = client
        self._new_message = new_message
        self._size = size or DEFAULT_CHANNEL_SIZE
        self.queue: asyncio.Queue[Item] = asyncio.Queue()
        self._held = 0  # envelopes put into the queue and not yet taken
        self._space: asyncio.Future[None] | None = None  # readers waiting for room
        self._tasks: list[asyncio.Task[None]] = []

    def start(self, offsets: dict[str, int]) -> None:
        loop = asyncio.get_running_loop()
        for journal, offset in sorted(offsets.items()):
            self._tasks.append(loop.create_task(self._pump(journal, offset),
                                                name=f"read {journal}"))

    def taken(self, item: Item) -> None:
        """`item` left the queue: its envelopes no longer count against the bound."""
        if not isinstance(item, Exception):
            self._held -= len(item)
            if self._held < self._size:
                wake(self._space)

    def _put(self, item: Item) -> None:
        if not isinstance(item, Exception):
            self._held += len(item)
        self.queue.put_nowait(item)

    async def _room(self) -> None:
        while self._held >= self._size:
            if self._space is None or self._space.done():
                self._space = asyncio.get_running_loop().create_future()
            await asyncio.shield(self._space)  # shared by every reader that waits

    async def _pump(self, journal: str, offset: int) -> None:
        try:
            async for batch in read_uncommitted_batches(self._client, journal, offset,
                                                        self._new_message):
                if batch:
                    await self._room()
                    self._put(batch)
        except BaseException as err:
            if ours(err):
                raise
            log.warning("reading source %r failed: %s", journal, err)
            await self._room()
            self._put(err if isinstance(err, Exception) else AppError("read", err))

    async def stop(self) -> None:
        for task in self._tasks:
            await cancel_and_wait(task)
        self._tasks.clear()
