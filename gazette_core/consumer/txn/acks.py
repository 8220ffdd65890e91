"""The transaction's AppendService: ACK appends keep their place but wait for the commit.

An ACK intent must reach its journal only after the store commit resolved,
yet messages the next transaction publishes meanwhile carry larger clocks
and must land *after* the ACK: written before it, the ACK would roll them
back. So `append_after` holds the journal: records written to it while the
commit is pending wait in order behind the ACK and are queued right after
it. At most one held ACK per journal exists at a time, because a transaction
never starts its commit before the previous transaction's ACKs resolved.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

from gazette_core.broker.client.append_service import AppendService, AsyncAppend
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import GazetteError
from gazette_core.tasks import copy_outcome

_Held = tuple[bytes, "asyncio.Future[Any]", bool]  # record, its future, batch-style?




def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


class TxnAppendService(AppendService):
    """An AppendService with `append_after` for ACKs that depend on a commit."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._held: dict[str, list[_Held]] = {}

    def enqueue(self, journal: str, record: bytes) -> AsyncAppend:
        held = self._held.get(journal)
        if held is None:
            return super().enqueue(journal, record)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        held.append((record, future, True))
        return AsyncAppend(future)

    def write(self, journal: str, record: bytes) -> asyncio.Future[pb.Fragment]:
        held = self._held.get(journal)
        if held is None:
            return super().write(journal, record)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        held.append((record, future, False))
        return future

    def held(self) -> list[str]:
        """Journals whose appends wait behind an ACK."""
        return list(self._held)

    def append_after(self, journal: str, record: bytes, after: Awaitable[Any]) -> AsyncAppend:
        """Append `record` once `after` resolved; later writes to `journal` go after it.

        If `after` fails, neither the record nor the writes held behind it are
        appended: they fail with the same error.
        """
        if journal in self._held:
            raise RuntimeError(f"an ACK to {journal!r} is already waiting for its commit")
        self._held[journal] = []
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        waiter = asyncio.ensure_future(after)
        waiter.add_done_callback(lambda w: self._release(journal, record, w, future))
        return AsyncAppend(future)

    def _release(self, journal: str, record: bytes, waiter: asyncio.Future[Any],
                 future: asyncio.Future[Any]) -> None:
        held = self._held.pop(journal)
        failure: BaseException | None = None
        if waiter.cancelled():
            failure = GazetteError(f"the commit behind the ACK to {journal!r} was cancelled")
        else:
            failure = waiter.exception()
        try:
            if failure is None:
                self._append_held(journal, record, future, held)
                return
        except GazetteError as err:  # The service was stopped meanwhile.
            failure = err
        for target in [future, *(f for _, f, _ in held)]:
            if not target.done():
                target.set_exception(failure)
                target.add_done_callback(_retrieve)

    def _append_held(self, journal: str, record: bytes, future: asyncio.Future[Any],
                     held: list[_Held]) -> None:
        ack = super().enqueue(journal, record)
        ack.future.add_done_callback(lambda s: copy_outcome(s, future))
        for data, target, batch in held:
            source = super().enqueue(journal, data).future if batch else super().write(
                journal, data)
            source.add_done_callback(lambda s, t=target: copy_outcome(s, t))  # type: ignore[misc]
