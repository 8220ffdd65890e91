"""What the `gazette` streaming source's driver asks the brokers, and the tasks it hands out.

`list_stream` lists the journals a query's selector matches with their
fragments up to each one's write head (one List, and a Read of the head and a
ListFragments per journal, through the broker and with the TLS and
authorization the options give: selection.py, head_listing.py); suspended journals are
set aside, not taken for deleted, as are journals so new that no broker
serves them yet. `range_task` makes the `RangeTask` of a
range from that listing: the fragments covering it and every transaction
still open at its start, and how executors reach them.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gazette_core.broker.client.channel import close_channels, journal_stub
from gazette_core.broker.protocol.labels_ext import parse_selector
from spark_jobs.decode.content import RAW, JournalTask, is_persisted
from spark_jobs.selection import (
    SPARK,
    NothingMatched,
    Selection,
    check_file_root,
    fetch_selection,
)
from spark_jobs.source.frame_plan import shared_kind
from spark_jobs.source.range_read import RangeTask
from spark_jobs.source.stream_plan import Journal

if TYPE_CHECKING:
    from spark_jobs.source.options import ReadOptions
    from spark_jobs.source.stream_offsets import Position


@dataclass
class Listing:
    """The selected journals at one moment, their shared framing, and the suspended ones."""

    journals: dict[str, Journal] = field(default_factory=dict)
    suspended: set[str] = field(default_factory=set)
    kind: str = RAW


def list_stream(options: ReadOptions, *, allow_empty: bool) -> Listing:
    """The journals the selector matches now; a selector matching none is refused unless
    `allow_empty` (a running query whose journals all went)."""
    o = options

    async def fetch() -> Selection:
        try:
            return await fetch_selection(journal_stub(o.broker, o.client),
                                         parse_selector(o.selector), o.selector, o.timeout,
                                         skip_unassigned=True, to_head=True, client=o.client)
        except NothingMatched:
            if not allow_empty:
                raise
            return Selection()
        finally:
            await close_channels()

    selection = asyncio.run(fetch())
    return Listing(
        journals={spec.name: Journal.listed(spec.name, fragments)
                  for spec, fragments in selection.journals},
        # A journal no broker serves yet holds still, as a suspended one: the next
        # listing picks it up once it is assigned.
        suspended=set(selection.suspended) | set(selection.unassigned),
        kind=shared_kind([spec for spec, _ in selection.journals], SPARK))


def range_task(options: ReadOptions, kind: str, schema_json: str, journal: Journal,
               at: Position, end: int) -> RangeTask:
    """The task reading [at, end) of `journal`, from the producers' states at `at`."""
    o = options
    fragments = journal.reading(at.lowest_needed(), end)
    check_file_root([f for f in fragments if is_persisted(f)], o.file_root, o.file_only, SPARK)
    unpersisted = any(not is_persisted(f) for f in fragments)
    source = JournalTask(
        journal=journal.name, kind=kind,
        fragments=tuple(f.SerializeToString() for f in fragments),
        broker=o.broker if unpersisted else "", file_root=o.file_root or "",
        file_only=o.file_only, ring_size=o.ring_size, client=o.client)
    return RangeTask(source, at.offset, end, at.producers, schema_json)
