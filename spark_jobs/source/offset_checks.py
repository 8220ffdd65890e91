"""A batch read's offsets checked at planning: content lost to pruning, and record boundaries.

`startingOffsets` and `endingOffsets` name byte offsets. Two ways an offset
can be wrong are caught on the driver, before any task runs, in one line
naming the journal and the offset:

- Lost content: the range to read, [start, end), crosses offsets no
  fragment holds any more (pruned, or never persisted). With
  `failOnDataLoss` (the default, as streaming's) the read is refused;
  without, it reads what remains and logs a warning. Content left out on
  purpose (`since`, `unpersisted=false`) is not lost: the check looks at the
  whole listing.
- Not a record boundary: an offset inside a fragment where no record starts
  would have a task decode half a record. The fragment holding it is read
  from its begin (an append's boundary) up to the first record end past the
  offset, and the offset is refused naming the nearest record starts around
  it. Offsets at fragment boundaries are append boundaries and are taken as
  they are; raw journals have no records. A new streaming query's
  `startingOffsets` is checked the same way (`check_stream_start`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from gazette_core.broker.client.channel import close_channels
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import GazetteError, ValidationError
from spark_jobs.decode.content import CSV, RAW, JournalTask, content
from spark_jobs.decode.csv_blocks import csv_ends
from spark_jobs.decode.json_blocks import line_ends
from spark_jobs.source.options import EARLIEST, LATEST, JournalOffsets
from spark_jobs.source.stream_listing import range_task
from spark_jobs.source.stream_offsets import Position
from spark_jobs.source.stream_plan import Journal

if TYPE_CHECKING:
    from spark_jobs.source.options import ReadOptions

log = logging.getLogger(__name__)


class LostContent(GazetteError):
    """Content a batch read's offsets cover is gone from the stores (failOnDataLoss)."""


def check_loss(listed: Journal, starting: JournalOffsets, ending: JournalOffsets,
               fail: bool) -> None:
    """Refuse (`fail`) or warn of content between the read's offsets that no fragment holds."""
    if not listed.fragments:
        return
    begin, end = (_requested(offsets.of(listed.name), listed) for offsets in (starting, ending))
    gap = listed.first_gap(begin, min(end, listed.head))
    if gap is None:
        return
    message = f"journal {listed.name}: offsets [{gap[0]}, {gap[1]}) were removed from the stores"
    if fail:
        raise LostContent(f"{message} (failOnDataLoss is true; set it to false to read what "
                          "remains)")
    log.warning("%s; reading what remains (failOnDataLoss is false)", message)


def _requested(at: int, listed: Journal) -> int:
    return listed.earliest if at == EARLIEST else listed.head if at == LATEST else at


def check_boundaries(source: JournalTask, starting: JournalOffsets, ending: JournalOffsets
                     ) -> None:
    """Refuse a byte offset of `source.journal` inside a fragment where no record starts."""
    if source.kind == RAW:
        return
    for offsets, name in ((starting, "startingOffsets"), (ending, "endingOffsets")):
        at = offsets.journals.get(source.journal, EARLIEST)
        holder = next((f for f in source.parsed() if f.begin < at < f.end), None)
        if holder is None:
            continue  # A fragment boundary, a named offset, or outside the content.
        before, after = asyncio.run(_nearest(source, holder, at))
        if before != at:
            raise ValidationError(f"option {name}", (
                f"offset {at} of journal {source.journal} is not where a record starts; the "
                f"nearest records start at {before} and {after}"))


async def _nearest(source: JournalTask, holder: pb.Fragment, at: int) -> tuple[int, int]:
    """The record starts at or before `at`, and after it, reading `holder` from its begin."""
    ends: Callable[[bytes | bytearray], np.ndarray] = csv_ends if source.kind == CSV else (
        line_ends)
    task = dataclasses.replace(source, fragments=(holder.SerializeToString(),))
    data = bytearray()
    try:
        async for _, chunk in content(task, holder.begin, holder.end):
            data += chunk
            # Records are split only once the data passes `at`: mostly once, at one chunk.
            if len(data) > at - holder.begin and np.any(holder.begin + ends(data) > at):
                break
    finally:
        await close_channels()
    starts = np.concatenate(([holder.begin], holder.begin + ends(data), [holder.end]))
    return int(starts[starts <= at].max()), int(starts[starts > at].min())


def check_offsets(listing: Sequence[tuple[str, list[pb.Fragment]]],
                  sources: Sequence[JournalTask], starting: JournalOffsets,
                  ending: JournalOffsets, fail_on_data_loss: bool) -> None:
    """Every check of a batch read's offsets: `listing` is each journal's whole listing,
    `sources` the planned tasks (frame_plan.plan_frame)."""
    for name, fragments in listing:
        check_loss(Journal.listed(name, fragments), starting, ending, fail_on_data_loss)
    for source in sources:
        check_boundaries(source, starting, ending)


def check_stream_start(options: ReadOptions, kind: str, journals: Mapping[str, Journal],
                       starting: str | dict[str, int]) -> None:
    """Refuse a new streaming query's startingOffsets byte offset inside a record."""
    named = starting if isinstance(starting, dict) else {}
    for name, at in sorted(named.items()):
        journal = journals.get(name)
        if at < 0 or journal is None or not journal.fragments or at > journal.head:
            continue  # Named offsets; unknown journals and offsets past the head: refused later.
        source = range_task(options, kind, "", journal, Position(at), journal.head).source
        check_boundaries(source, JournalOffsets(journals={name: at}), JournalOffsets())
