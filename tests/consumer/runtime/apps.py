"""Applications for runtime tests: a counter over a JSON or SQLite store, sync or async."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

from gazette_core.consumer.app import DeferToNextTransaction
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.store.json_file import JSONFileStore
from gazette_core.consumer.store.sqlite import SQLiteStore
from gazette_core.message.framing import JSONFraming
from gazette_core.message.interfaces import Envelope, JSONMessage
from gazette_core.message.uuid import Flags, get_flags
from tests.consumer.runtime.support import OUT


@dataclass
class Num(JSONMessage):
    n: int = 0


def to_out(msg: Any) -> tuple[str, JSONFraming]:
    return OUT, JSONFraming()


def is_ack(envelope: Envelope) -> bool:
    return bool(get_flags(envelope.message.get_uuid()) == Flags.ACK_TXN)


class HeldCommits:
    """A Store wrapper whose commits can be held, and which records what they waited on."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.hold = asyncio.Event()
        self.hold.set()
        self.started = 0  # start_commit calls
        self.resolved = 0  # commits that resolved
        self.wait_fors: list[Any] = []
        self.checkpoints: list[cpb.Checkpoint] = []
        self.restored: cpb.Checkpoint | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def restore_checkpoint(self) -> cpb.Checkpoint:
        self.restored = await self.inner.restore_checkpoint()
        return self.restored

    def start_commit(self, checkpoint: cpb.Checkpoint, wait_for: Any) -> Awaitable[None]:
        self.started += 1
        self.wait_fors.append(wait_for)
        self.checkpoints.append(checkpoint)
        return asyncio.ensure_future(self._commit(checkpoint, wait_for))

    async def _commit(self, checkpoint: cpb.Checkpoint, wait_for: Any) -> None:
        await self.hold.wait()
        await self.inner.start_commit(checkpoint, wait_for)
        self.resolved += 1

    async def destroy(self) -> None:
        await self.inner.destroy()


@dataclass
class Counter:
    """Counts the numbers of non-ACK messages and publishes each one's tenfold, uncommitted."""

    kind: str = "json"
    events: list[tuple[str, Any]] = field(default_factory=list)
    stores: list[HeldCommits] = field(default_factory=list)
    defer: set[int] = field(default_factory=set)  # numbers deferred once each
    publish: bool = True
    handles: list[Any] = field(default_factory=list)
    fail_restore: bool = False

    def new_message(self, spec: Any) -> Num:
        return Num()

    async def new_store(self, shard: Any, recorder: Any) -> HeldCommits:
        if self.kind == "sqlite":
            inner: Any = await SQLiteStore.open(
                recorder.directory, recorder,
                bootstrap_sql="CREATE TABLE IF NOT EXISTS seen (n INTEGER)")
        else:
            inner = await JSONFileStore.open(recorder.directory, recorder,
                                             initial_state={"seen": []})
        if self.fail_restore:
            async def broken() -> cpb.Checkpoint:
                raise RuntimeError("restore failed on purpose")
            inner.restore_checkpoint = broken
        store = HeldCommits(inner)
        self.stores.append(store)
        return store

    def begin_txn(self, shard: Any, store: Any) -> None:
        self.events.append(("begin", None))

    async def consume_message(self, shard: Any, store: Any, envelope: Envelope,
                              publisher: Any) -> None:
        if is_ack(envelope):
            return
        n = envelope.message.n  # type: ignore[attr-defined]
        if n in self.defer:
            self.defer.discard(n)
            self.events.append(("defer", n))
            raise DeferToNextTransaction()
        await add_seen(store.inner, n)
        self.events.append(("consume", n))
        if self.publish:
            self.handles.append(publisher.publish_uncommitted(to_out, Num(n=n * 10)))

    def finalize_txn(self, shard: Any, store: Any, publisher: Any) -> None:
        self.events.append(("finalize", None))

    def finished_txn(self, shard: Any, store: Any, commit: Any) -> None:
        self.events.append(("finished", commit))

    def consumed(self) -> list[int]:
        return [n for kind, n in self.events if kind == "consume"]

    def transactions(self) -> list[list[int]]:
        """The numbers consumed by each transaction, in order."""
        txns: list[list[int]] = []
        for kind, n in self.events:
            if kind == "begin":
                txns.append([])
            elif kind == "consume":
                txns[-1].append(n)
        return txns


async def add_seen(store: Any, n: int) -> None:
    if isinstance(store, SQLiteStore):
        await store.execute("INSERT INTO seen VALUES (?)", (n,))
    else:
        store.state["seen"].append(n)


async def seen(store: Any) -> list[int]:
    """The committed (or in-progress) numbers of a store."""
    if isinstance(store, SQLiteStore):
        return [r[0] for r in await store.execute("SELECT n FROM seen ORDER BY n")]
    return sorted(store.state["seen"])
