"""Micro-batch planning of the `gazette` streaming source: pure functions over a listing.

The driver lists the selected journals and their fragments (stream_reader.py);
these functions decide from that listing where each journal's next micro-batch
ends, whether content the query still needs was pruned, and which fragments a
range's task reads.

- A journal's readable content is the fragments covering it (the same cover a
  batch read takes, spools included); its write head is the end of the last.
- Ends fall on fragment ends (or the write head or target seen earlier), which
  are always whole appends, so a range never cuts a message.
- Content is lost when the range a query has not read yet is not covered:
  pruned before it was read. An open transaction whose begin was pruned is
  taken for abandoned and dropped (its earlier messages cannot come out).
- `maxBytesPerTrigger` is shared fragment by fragment, round-robin over the
  journals with the largest backlog first; a micro-batch takes at least one
  fragment so a fragment larger than the limit still moves the query on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from spark_jobs.source.frame_plan import covering
from spark_jobs.source.stream_offsets import Position

if TYPE_CHECKING:
    from gazette_core.broker.protocol import protocol_pb2 as pb


@dataclass(frozen=True)
class Journal:
    """One listed journal: its covering fragments, in offset order."""

    name: str
    fragments: tuple[pb.Fragment, ...]

    @classmethod
    def listed(cls, name: str, fragments: list[pb.Fragment]) -> Journal:
        return cls(name, tuple(covering(fragments, since=0, unpersisted=True)))

    @property
    def head(self) -> int:
        return self.fragments[-1].end if self.fragments else 0

    @property
    def earliest(self) -> int:
        return self.fragments[0].begin if self.fragments else 0

    def first_gap(self, begin: int, end: int) -> tuple[int, int] | None:
        """The first part of [begin, end) no fragment covers, or None."""
        at = begin
        for fragment in self.fragments:
            if at >= end:
                return None
            if fragment.end <= at:
                continue
            if fragment.begin > at:
                return at, min(fragment.begin, end)
            at = fragment.end
        return (at, end) if at < end else None

    def boundaries(self, begin: int, end: int) -> list[int]:
        """Fragment ends within (begin, end), then `end`: where a range may be cut."""
        return sorted({f.end for f in self.fragments if begin < f.end < end} | {end})

    def reading(self, begin: int, end: int) -> tuple[pb.Fragment, ...]:
        """The fragments a task reading [begin, end) needs."""
        return tuple(f for f in self.fragments if f.end > begin and f.begin < end)


@dataclass(frozen=True)
class Loss:
    """Content of `journal` the query needs, pruned from the stores: [begin, end)."""

    journal: str
    begin: int
    end: int

    def message(self) -> str:
        return (f"journal {self.journal}: offsets [{self.begin}, {self.end}) were removed from "
                "the stores before the query read them (failOnDataLoss is true; set it to "
                "false to skip lost content with a warning)")


def lost_at_start(journal: Journal, at: Position) -> Loss | None:
    """Content the query has not read yet that is gone: a gap at its offset."""
    gap = journal.first_gap(at.offset, max(at.offset, journal.head))
    if gap is None or gap[0] > at.offset:
        return None
    return Loss(journal.name, gap[0], gap[1])


def pruned_opens(journal: Journal, at: Position) -> tuple[Position, list[str]]:
    """`at` without the open transactions whose begin was pruned from the stores, and their
    producers. The query read that content already and those messages were pending: a
    transaction left open past the stores' retention is taken for abandoned, so it no longer
    holds the floor of the fragments listed and checked for loss (docs/design/spark.md,
    Streaming offsets)."""
    dropped = [pid for pid, _, _, begin in at.producers
               if 0 <= begin < at.offset and journal.first_gap(begin, at.offset) is not None]
    if not dropped:
        return at, []
    return Position(at.offset, tuple(
        (pid, ack, ack, -1) if pid in dropped else (pid, ack, clock, begin)
        for pid, ack, clock, begin in at.producers)), dropped


def skip_loss(at: Position, loss: Loss) -> Position:
    """Where reading resumes past a loss: its end, or the same offset without the open
    transactions whose messages were lost (their later messages still count)."""
    if loss.end > at.offset:
        return Position(loss.end)
    return Position(at.offset, tuple(
        (pid, ack, ack, -1) if 0 <= begin < loss.end else (pid, ack, clock, begin)
        for pid, ack, clock, begin in at.producers))


def readable_end(journal: Journal, at: Position, target: int | None) -> int:
    """How far a journal can be read from `at` now: its head, a gap's start, the target."""
    end = journal.head if target is None else min(journal.head, target)
    gap = journal.first_gap(at.offset, end)
    return gap[0] if gap is not None else max(end, at.offset)


def admit(journals: dict[str, Journal], starts: dict[str, int], ends: dict[str, int],
          max_bytes: int | None) -> dict[str, int]:
    """Each journal's end for the next micro-batch, within `max_bytes` (None: no limit)."""
    if max_bytes is None:
        return dict(ends)
    admitted = dict(starts)
    cuts = {name: journals[name].boundaries(starts[name], ends[name])
            for name in starts if ends[name] > starts[name]}
    order = sorted(cuts, key=lambda n: (starts[n] - ends[n], n))  # Largest backlog first.
    left, moved = max_bytes, True
    while moved:
        moved = False
        for name in order:
            if not cuts[name]:
                continue
            cost = cuts[name][0] - admitted[name]
            if cost <= left or left == max_bytes:
                admitted[name] = cuts[name].pop(0)
                left -= cost
                moved = True
    return admitted


def split_points(journal: Journal, begin: int, end: int, split_bytes: int) -> list[int]:
    """Cuts of [begin, end) into ranges of about `split_bytes` (0: none), at fragment ends."""
    if split_bytes <= 0:
        return []
    cuts, last = [], begin
    for boundary in journal.boundaries(begin, end)[:-1]:
        if boundary - last >= split_bytes and end - boundary >= split_bytes // 2:
            cuts.append(boundary)
            last = boundary
    return cuts
