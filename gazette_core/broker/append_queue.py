"""Who may wait for a journal's pipeline, so idle or stalled Append streams cannot block writers.

An append holds its journal's pipeline while it streams, and the minimum
append rate (`append_stream`) is what bounds a slow client's hold. Two rules
keep that bound from adding up across many clients:

* An append queues only once its client sent the message after the first.
  A client that opens a stream and then says nothing spends its initial
  rate credit outside the queue and is failed there, delaying nobody.
* At most `--broker.max-append-queue` appends wait for one journal's pipeline;
  further ones are refused with a retriable error (gRPC UNAVAILABLE) instead of
  waiting behind up to that many minimum-rate windows.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from gazette_core.broker.append_stream import (
    MIN_RATE_CREDIT_S,
    MIN_RATE_REASON,
    AppendStreamError,
    next_request,
)
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import GazetteError

if TYPE_CHECKING:
    from gazette_core.broker.replica import Replica

class AppendQueueFull(GazetteError):
    """Too many appends already wait for the journal's pipeline; the client should retry."""

    retriable = True


def waiting(replica: Replica) -> int:
    """How many appends wait for `replica`'s pipeline right now."""
    return replica.pipeline_waiting


@asynccontextmanager
async def pipeline_turn(replica: Replica, limit: int) -> AsyncIterator[None]:
    """Hold the journal's pipeline, after a place in its queue of at most `limit` (0: any)."""
    lock = replica.pipeline_lock
    count = waiting(replica)
    if limit > 0 and count >= limit:
        raise AppendQueueFull(
            f"journal {replica.journal!r} has {count} append(s) waiting for its pipeline "
            "already (--broker.max-append-queue); retry later")
    replica.pipeline_waiting += 1
    try:
        await lock.acquire()
    finally:
        replica.pipeline_waiting -= 1
    try:
        yield
    finally:
        lock.release()


async def await_follow_up(requests: AsyncIterator[pb.AppendRequest], rate_required: bool = True
                          ) -> tuple[AsyncIterator[pb.AppendRequest], pb.AppendRequest | None]:
    """The message after the first (None at EOF), and the stream replaying it.

    When a minimum append rate is `rate_required`, it must arrive within the
    initial minimum-rate credit, as it would have to once the append holds
    the pipeline.
    """
    try:
        async with asyncio.timeout(MIN_RATE_CREDIT_S if rate_required else None):
            second = await next_request(requests)
    except TimeoutError:
        raise AppendStreamError(MIN_RATE_REASON) from None

    async def replay() -> AsyncIterator[pb.AppendRequest]:
        if second is not None:
            yield second
        async for req in requests:
            yield req

    return replay(), second
