"""The Shard an application sees: identity, spec, assignment, and its transaction's client.

`journal_client` is the AppendService of the primary's transactions (the
publisher writes through it too): every append still pending when a
transaction commits is waited for by the store commit, so raw appends made
here are written before the commit, at least once.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

# Raised when the primary loop ends while a caller waits; Stat answers SHARD_STOPPED.
from gazette_core.consumer.api.errors import ShardStoppedError
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb

__all__ = ["Shard", "ShardStoppedError"]

if TYPE_CHECKING:
    from gazette_core.broker.client.append_service import AppendService
    from gazette_core.keyspace.keyspace import KeyValue


class Shard:
    """One shard as served by this process."""

    def __init__(self, spec: cpb.ShardSpec, fqn: str, assignment: KeyValue) -> None:
        self.spec = spec
        self.fqn = fqn  # the shard's item key in Etcd
        self.assignment = assignment
        self.journal_client: AppendService | None = None  # set while primary
        self.recovered_hints: rpb.FSMHints | None = None  # hints the store was recovered from
        self._read_through: dict[str, int] = {}
        self._publish_at: dict[str, int] = {}
        self._progressed = asyncio.Event()

    @property
    def id(self) -> str:
        return self.spec.id

    def progress(self) -> tuple[dict[str, int], dict[str, int]]:
        """(read_through, publish_at) of the last completed transaction."""
        return dict(self._read_through), dict(self._publish_at)

    def set_progress(self, read_through: dict[str, int], publish_at: dict[str, int]) -> None:
        """Publish new progress and wake everyone waiting on it (offsets only move forward)."""
        for journal, offset in read_through.items():
            self._read_through[journal] = max(offset, self._read_through.get(journal, 0))
        for journal, offset in publish_at.items():
            self._publish_at[journal] = max(offset, self._publish_at.get(journal, 0))
        self._progressed.set()
        self._progressed = asyncio.Event()

    async def progressed(self) -> None:
        """Return at the next progress update."""
        await self._progressed.wait()

    def wake(self) -> None:
        """Wake progress waiters without progress (e.g. the loop stopped)."""
        self._progressed.set()
        self._progressed = asyncio.Event()
