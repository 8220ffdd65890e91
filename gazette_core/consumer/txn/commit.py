"""A transaction's commit and its ACK appends, and the progress they publish once resolved.

The commit of transaction N+1 may not start before N's commit and every ACK
append of N resolved (docs/design/consumer.md#commit-ordering); `Settled.wait()` is that barrier.
When it resolves, N's checkpoint offsets become the shard's read_through and
the ACK appends' end offsets its publish_at.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.errors import StatusError

if TYPE_CHECKING:
    from gazette_core.consumer.shard import Shard
    from gazette_core.consumer.txn.acks import TxnAppendService

log = logging.getLogger(__name__)


def read_through_of(checkpoint: cpb.Checkpoint) -> dict[str, int]:
    return {journal: src.read_through for journal, src in checkpoint.sources.items()}


# Told the loop times at which the commit, then every ACK append, resolved.
OnSettled = Callable[[float, float], None]


class Settled:
    """The commit and ACK appends of one transaction, awaited together.

    `on_settled` hears when each resolved, before the progress is published.
    """

    def __init__(self, shard: Shard, commit: Awaitable[Any] | None,
                 acks: Mapping[str, Awaitable[Any]], read_through: dict[str, int],
                 *, skip_missing: bool = False, on_settled: OnSettled | None = None) -> None:
        self._task = asyncio.ensure_future(
            self._settle(shard, commit, acks, read_through, skip_missing, on_settled))
        self._task.add_done_callback(lambda t: None if t.cancelled() else t.exception())

    @staticmethod
    async def _settle(shard: Shard, commit: Awaitable[Any] | None,
                      acks: Mapping[str, Awaitable[Any]], read_through: dict[str, int],
                      skip_missing: bool, on_settled: OnSettled | None) -> None:
        loop = asyncio.get_running_loop()
        if commit is not None:
            await commit
        committed = loop.time()
        publish_at: dict[str, int] = {}
        for journal, ack in acks.items():
            try:
                fragment = await ack
            except StatusError as err:
                if not (skip_missing and err.status == pb.JOURNAL_NOT_FOUND):
                    raise
                log.warning("not re-sending the ACK to %r: the journal no longer exists",
                            journal)
                continue
            publish_at[journal] = int(fragment.end)
        if on_settled is not None:
            on_settled(committed, loop.time())
        shard.set_progress(read_through, publish_at)

    def done(self) -> bool:
        return self._task.done()

    def future(self) -> asyncio.Future[None]:
        return self._task

    async def wait(self) -> None:
        """Return once everything resolved; raise the first failure."""
        await asyncio.shield(self._task)


def resend_ack_intents(appender: TxnAppendService, shard: Shard,
                       checkpoint: cpb.Checkpoint) -> Settled:
    """Re-append the recovered checkpoint's ACK intents, before anything else is written.

    A crash may have come between a commit and its ACKs; sending them again is
    harmless (a duplicate ACK is ignored by readers). They count as the
    previous transaction's ACKs, which the first commit waits for.
    """
    acks = {journal: appender.enqueue(journal, bytes(ack))
            for journal, ack in sorted(checkpoint.ack_intents.items())}
    return Settled(shard, None, acks, read_through_of(checkpoint), skip_missing=True)


def start_acks(appender: TxnAppendService, commit: Awaitable[Any],
               intents: dict[str, bytes]) -> dict[str, Awaitable[Any]]:
    """An ACK append per intent, each written only once `commit` resolved."""
    return {journal: appender.append_after(journal, ack, commit)
            for journal, ack in intents.items()}
