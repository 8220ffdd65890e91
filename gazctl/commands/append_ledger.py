"""Which records `gazctl journals append` committed where, to say exactly that when one fails.

Records are numbered from 1 in input order (key records of keyed mappings
are not counted). Each record rides in a batch of the AppendService, and a
batch commits or fails whole, so the ledger keeps the record numbers of every
batch and reads the outcome off its future.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gazette_core.errors import GazetteError

if TYPE_CHECKING:
    from collections.abc import Callable

    from gazette_core.broker.client.append_service import AsyncAppend
    from gazette_core.broker.protocol import protocol_pb2 as pb


class PartialAppend(GazetteError):
    """Some records of an append failed; the message says which were committed."""


@dataclass
class _Batch:
    journal: str
    handle: AsyncAppend
    numbers: list[int] = field(default_factory=list)


class Ledger:
    """Record numbers per batch; `on_failure` is called once, when a batch first fails."""

    def __init__(self, on_failure: Callable[[], None]) -> None:
        self.count = self.size = 0
        self.journals: set[str] = set()
        self._on_failure = on_failure
        self._batches: dict[int, _Batch] = {}  # by id() of the batch's handle, kept alive here

    def add(self, journal: str, record: bytes, handle: AsyncAppend) -> None:
        self.count, self.size = self.count + 1, self.size + len(record)
        self.journals.add(journal)
        batch = self._batches.get(id(handle))
        if batch is None:
            batch = self._batches[id(handle)] = _Batch(journal, handle)
            handle.future.add_done_callback(self._settled)
        batch.numbers.append(self.count)

    def _settled(self, future: asyncio.Future[pb.Fragment]) -> None:
        if future.cancelled() or future.exception() is not None:
            self._on_failure()

    async def settle(self) -> None:
        """Wait until every batch has committed or failed."""
        futures = [b.handle.future for b in self._batches.values()]
        await asyncio.gather(*futures, return_exceptions=True)

    def failure(self) -> PartialAppend | None:
        """The error naming what was committed and the first failed record, if one failed."""
        done = [b for b in self._batches.values() if b.handle.future.done()]
        failed = sorted((b for b in done if _error(b) is not None), key=lambda b: b.numbers[0])
        if not failed:
            return None
        first = failed[0]
        error = _error(first)
        committed = [b for b in done if _error(b) is None]
        text = f"{_committed(committed)}; record {first.numbers[0]} failed: {error}"
        rest = sorted(n for b in failed for n in b.numbers)[1:]
        if rest:
            text += f"; {_records(rest)} not appended either"
        failure = PartialAppend(text)
        failure.hint = getattr(error, "hint", "")
        return failure


def _error(batch: _Batch) -> BaseException | None:
    future = batch.handle.future
    if future.cancelled():
        return GazetteError("cancelled")
    return future.exception()


def _committed(batches: list[_Batch]) -> str:
    """'appended records 1-3 (bytes [0, 14) of journal x), ...' in order of record number."""
    by_journal: dict[str, list[_Batch]] = {}
    for batch in sorted(batches, key=lambda b: b.numbers[0]):
        by_journal.setdefault(batch.journal, []).append(batch)
    if not by_journal:
        return "appended no records"
    parts = []
    for journal, mine in by_journal.items():
        numbers = sorted(n for b in mine for n in b.numbers)
        commits = sorted((c.begin, c.end) for c in (b.handle.future.result() for b in mine))
        parts.append(f"{_records(numbers)} (bytes {_spans(commits)} of journal {journal})")
    return "appended " + ", ".join(parts)


def _records(numbers: list[int]) -> str:
    """'record 4' or 'records 1-3, 7'."""
    ranges: list[list[int]] = []
    for n in numbers:
        if ranges and ranges[-1][1] == n - 1:
            ranges[-1][1] = n
        else:
            ranges.append([n, n])
    text = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)
    return f"record {text}" if len(numbers) == 1 else f"records {text}"


def _spans(commits: list[tuple[int, int]]) -> str:
    """'[0, 14)' or '[0, 14), [30, 42)': adjacent commits joined."""
    merged: list[list[int]] = []
    for begin, end in commits:
        if merged and merged[-1][1] == begin:
            merged[-1][1] = end
        else:
            merged.append([begin, end])
    return ", ".join(f"[{a}, {b})" for a, b in merged)
