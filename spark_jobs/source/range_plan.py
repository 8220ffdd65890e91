"""How a batch read of the `gazette` data source cuts journals into Spark tasks (pure planning).

Each journal's covering fragments (frame_plan.covering) are cut at
fragment boundaries into ranges of about `splitBytes` each (0: one range per
journal), between the offsets `startingOffsets` and `endingOffsets` resolve
to. Fragment boundaries are append boundaries, so a range never starts inside
a record.

Ranges that tile a journal emit each committed message exactly once only if
each starts from the exact producer states at its begin (range_read.py): the
first range of a journal starts from none (a fresh reader at its begin, as
`read_committed(offset=...)` is), and each next one from the states a scan of
the ranges before it leaves (`scan`, range_read.scan_states on the driver,
injected here so the planning is testable without stores). A range's
fragments also cover the open transactions it may commit, which began before
it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import ValidationError
from spark_jobs.decode.content import RAW, JournalTask
from spark_jobs.source.options import EARLIEST, LATEST, JournalOffsets, parse_offsets
from spark_jobs.source.range_read import ProducerState, RangeTask

Scan = Callable[[RangeTask], tuple[ProducerState, ...]]
Ahead = Callable[[Sequence[RangeTask]], None]  # the ranges `scan` will be given, in order


def cut_points(fragments: Sequence[pb.Fragment], begin: int, end: int,
               split_bytes: int) -> list[tuple[int, int]]:
    """[begin, end) cut at fragment ends into ranges of at least `split_bytes` of content.

    Overlapping bytes of fragments count once; the last range takes what is
    left (it may be smaller). `split_bytes` 0: the whole span is one range.
    """
    if end <= begin:
        return []
    if split_bytes <= 0:
        return [(begin, end)]
    ranges: list[tuple[int, int]] = []
    start = covered = begin
    held = 0  # content bytes of the range being cut; a gap (pruned) holds none
    for f in fragments:
        lo, hi = max(f.begin, covered), min(f.end, end)
        if hi <= lo:
            continue
        held, covered = held + hi - lo, hi
        if held >= split_bytes and hi < end:
            ranges.append((start, hi))
            start, held = hi, 0
    ranges.append((start, end))
    return ranges


def journal_bounds(journal: str, fragments: Sequence[pb.Fragment], starting: JournalOffsets,
                   ending: JournalOffsets) -> tuple[int, int]:
    """The [begin, end) of `journal` to read, from the offsets options and its content.

    Earliest is the first fragment's begin, latest the last one's end; an
    offset before the content (pruned, or left out by `since`) reads from
    where the content starts.
    """
    first, last = fragments[0].begin, fragments[-1].end

    def resolve(offsets: JournalOffsets, name: str) -> int:
        at = offsets.of(journal)
        if at == EARLIEST:
            return first
        if at == LATEST:
            return last
        if at > last:
            raise ValidationError(f"option {name}", f"offset {at} of journal {journal} is "
                                  f"past the end of its content, {last}")
        return max(at, first)

    begin, end = resolve(starting, "startingOffsets"), resolve(ending, "endingOffsets")
    if end < begin:
        raise ValidationError("option endingOffsets", f"journal {journal} would end at {end}, "
                              f"before its start at {begin}")
    return begin, end


def check_journals(offsets: JournalOffsets, selected: Iterable[str], name: str) -> None:
    """Refuse offsets of a journal the selector did not select."""
    known = set(selected)
    for journal in sorted(offsets.journals):
        if journal not in known:
            raise ValidationError(f"option {name}", f"journal {journal!r} is not among the "
                                  "journals the selector matches")


def read_offsets(starting: str, ending: str, selected: Iterable[str]
                 ) -> tuple[JournalOffsets, JournalOffsets]:
    """startingOffsets and endingOffsets, parsed and checked against the journals selected."""
    names = list(selected)
    begin = parse_offsets(starting, "startingOffsets", EARLIEST)
    end = parse_offsets(ending, "endingOffsets", LATEST)
    check_journals(begin, names, "startingOffsets")
    check_journals(end, names, "endingOffsets")
    return begin, end


def range_task(source: JournalTask, fragments: Sequence[pb.Fragment], begin: int, end: int,
               producers: tuple[ProducerState, ...], schema_json: str) -> RangeTask:
    """A task of [begin, end) with the fragments it reads: the range's, and those back to the
    earliest open transaction it may commit."""
    opened = [b for *_, b in producers if 0 <= b < begin]
    lo = min([begin, *opened])
    chosen = tuple(f.SerializeToString() for f in fragments if f.end > lo and f.begin < end)
    return RangeTask(source=dataclasses.replace(source, fragments=chosen), begin=begin,
                     end=end, producers=producers, schema_json=schema_json)


def seed_ranges(source: JournalTask, cuts: Sequence[tuple[int, int]], schema_json: str,
                scan: Scan, ahead: Ahead | None = None) -> list[RangeTask]:
    """The tasks of one journal's ranges, each starting from the states at its begin.

    The first starts from no producer state; each next from `scan` of the one
    before (the last range is not scanned: nothing follows it).
    """
    fragments = source.parsed()
    if ahead is not None and source.kind != RAW:
        # Each range's UUIDs read from its own content, before its states are known.
        ahead([range_task(source, fragments, b, e, (), schema_json) for b, e in cuts[:-1]])
    tasks: list[RangeTask] = []
    producers: tuple[ProducerState, ...] = ()
    for i, (begin, end) in enumerate(cuts):
        task = range_task(source, fragments, begin, end, producers, schema_json)
        tasks.append(task)
        if i + 1 < len(cuts) and source.kind != RAW:
            producers = scan(task)
    return tasks


def plan_ranges(sources: Sequence[JournalTask], *, starting: JournalOffsets,
                ending: JournalOffsets, split_bytes: int, schema_json: str,
                scan: Scan, ahead: Ahead | None = None) -> list[RangeTask]:
    """Every range task of the journals' sources (frame_plan.plan_frame's tasks)."""
    tasks: list[RangeTask] = []
    for source in sources:
        fragments = source.parsed()
        begin, end = journal_bounds(source.journal, fragments, starting, ending)
        cuts = cut_points(fragments, begin, end, split_bytes)
        tasks.extend(seed_ranges(source, cuts, schema_json, scan, ahead))
    return tasks
