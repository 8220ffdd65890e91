"""Mappings: which journal (partition) a message is published to.

A `Partitions` keeps a *watched* List of the journals a LabelSelector picks
(usually `app.gazette.dev/message-type=<Type>`), so a partition added later
is used by running publishers without a restart. A Mapping turns a message
into (journal, framing):
- `modulo_mapping`: FNV-1a 32 of the key, modulo the number of partitions;
- `rendezvous_mapping`: the journal with the highest hash(key) XOR
  hash(journal name), so adding a partition moves only the keys it wins;
- `random_mapping`: any partition.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from typing import TYPE_CHECKING

import grpc

from gazette_core.broker.client.journals import watch_journals
from gazette_core.broker.client.routing import target_for
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.selector_ext import format_selector
from gazette_core.errors import GazetteError
from gazette_core.message.framing import Framing, journal_framing
from gazette_core.message.interfaces import Message
from gazette_core.tasks import cancel_and_wait

if TYPE_CHECKING:
    from gazette_core.broker.client.routing import JournalClient

log = logging.getLogger(__name__)

Mapping = Callable[[Message], tuple[str, Framing]]
KeyFunc = Callable[[Message], "str | bytes"]

_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


def fnv1a32(data: str | bytes) -> int:
    raw = data.encode() if isinstance(data, str) else data
    h = _FNV_OFFSET
    for byte in raw:
        h = ((h ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return h


class NoPartitionsError(GazetteError):
    """The selector picks no journal to publish to."""


class Partitions:
    """The journals `selector` picks, sorted by name and kept current by a List watch.

    `start()` returns once the first snapshot arrived; `revision` counts the
    snapshots applied since.
    """

    def __init__(self, client: JournalClient, selector: pb.LabelSelector) -> None:
        self._client = client
        self.selector = selector
        self.journals: list[pb.JournalSpec] = []
        self.framings: list[Framing] = []
        self.name_hashes: list[int] = []
        self.revision = 0
        self._task: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()

    async def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._watch())
        # Its failure is logged by the watch and raised by start() when it is early; a
        # later one (e.g. a channel closed under it) must not be reported as unretrieved.
        self._task.add_done_callback(_retrieve)
        waiter = asyncio.ensure_future(self._changed.wait())
        try:
            await asyncio.wait([waiter, self._task], return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
        if self._task.done():
            self._task.result()  # The watch failed for good: raise why.

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None

    async def __aenter__(self) -> Partitions:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def wait_changed(self) -> None:
        """Block until the next snapshot is applied."""
        self._changed.clear()
        await self._changed.wait()

    async def _watch(self) -> None:
        stub = target_for(self._client, "", primary=False).stub
        try:
            async for snapshot in watch_journals(stub, self.selector):
                self.apply(snapshot)
        except (GazetteError, grpc.aio.UsageError) as err:
            # Publishing goes on with the last journals seen; say why they are frozen.
            log.error("watch of partitions %s failed: %s", format_selector(self.selector), err)
            raise

    def apply(self, snapshot: pb.ListResponse) -> None:
        """Use the journals of a List snapshot (the watch calls this for each one)."""
        specs = sorted((j.spec for j in snapshot.journals), key=lambda s: s.name)
        framings: list[Framing] = []
        usable: list[pb.JournalSpec] = []
        for spec in specs:
            try:
                framings.append(journal_framing(spec))
            except ValueError as err:
                log.warning("not publishing to %s: %s", spec.name, err)
                continue
            usable.append(spec)
        # Swapped together, so a mapping never sees lists of different lengths.
        self.journals, self.framings = usable, framings
        self.name_hashes = [fnv1a32(s.name) for s in usable]
        self.revision += 1
        self._changed.set()

    def _require(self) -> int:
        count = len(self.journals)
        if count == 0:
            raise NoPartitionsError("no journals with a message framing match "
                                    f"{format_selector(self.selector)!r}")
        return count


def modulo_mapping(key: KeyFunc, partitions: Partitions) -> Mapping:
    def mapping(msg: Message) -> tuple[str, Framing]:
        index = fnv1a32(key(msg)) % partitions._require()
        return partitions.journals[index].name, partitions.framings[index]
    return mapping


def rendezvous_mapping(key: KeyFunc, partitions: Partitions) -> Mapping:
    def mapping(msg: Message) -> tuple[str, Framing]:
        partitions._require()
        h = fnv1a32(key(msg))
        hashes = partitions.name_hashes
        index = max(range(len(hashes)), key=lambda i: h ^ hashes[i])
        return partitions.journals[index].name, partitions.framings[index]
    return mapping


def random_mapping(partitions: Partitions) -> Mapping:
    def mapping(msg: Message) -> tuple[str, Framing]:
        index = random.randrange(partitions._require())
        return partitions.journals[index].name, partitions.framings[index]
    return mapping


def _retrieve(task: asyncio.Task[None]) -> None:
    if not task.cancelled():
        task.exception()

