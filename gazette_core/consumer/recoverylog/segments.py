"""Segments (runs of one author's ops in one log) and the ordered SegmentSet.

A segment's last_offset of 0 means "unknown" and is treated as unbounded;
its first_offset is exact when a player built it and a lower bound when a
recorder did. A SegmentSet is sorted by seq_no and non-overlapping; adding a
segment merges it with overlapping or adjacent ones of the same author and log.
"""

from __future__ import annotations

from collections.abc import Iterator

from gazette_core.broker.protocol.names_ext import validate_journal_name
from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.errors import ValidationError


class SegmentError(ValidationError):
    """A segment is invalid, or cannot join a SegmentSet."""


def describe(seg: rpb.Segment) -> str:
    """A one-line description for error messages."""
    return (
        f"segment of log {seg.log!r} author {seg.author:#x} seq_no "
        f"{seg.first_seq_no}..{seg.last_seq_no} offset {seg.first_offset}..{seg.last_offset}"
    )


def validate_segment(seg: rpb.Segment, path: str = "segment", *, require_log: bool = True) -> None:
    """Check a segment's fields; `require_log` False allows an implied (empty) log.

    See docs/design/recoverylog.md#segments.
    """
    if seg.author == 0:
        raise SegmentError(f"{path}.author", "must not be zero")
    if seg.first_seq_no < 1:
        raise SegmentError(f"{path}.first_seq_no", f"{seg.first_seq_no} is not >= 1")
    if seg.first_offset < 0:
        raise SegmentError(f"{path}.first_offset", f"{seg.first_offset} is negative")
    if seg.last_seq_no < seg.first_seq_no:
        raise SegmentError(
            f"{path}.last_seq_no",
            f"{seg.last_seq_no} is before first_seq_no {seg.first_seq_no}",
        )
    if seg.last_offset != 0 and seg.last_offset <= seg.first_offset:
        raise SegmentError(
            f"{path}.last_offset",
            f"{seg.last_offset} is not 0 (unknown) nor after first_offset {seg.first_offset}",
        )
    if seg.log or require_log:
        try:
            validate_journal_name(seg.log, f"{path}.log")
        except ValidationError as exc:
            raise SegmentError(exc.path, exc.reason) from None


def _touches(a: rpb.Segment, b: rpb.Segment) -> bool:
    """Whether a and b overlap or are adjacent by seq_no."""
    return a.first_seq_no <= b.last_seq_no + 1 and b.first_seq_no <= a.last_seq_no + 1


def _overlaps(a: rpb.Segment, b: rpb.Segment) -> bool:
    return a.first_seq_no <= b.last_seq_no and b.first_seq_no <= a.last_seq_no


def merge(a: rpb.Segment, b: rpb.Segment) -> rpb.Segment:
    """Merge two touching segments of one author and log (docs/design/recoverylog.md#segments)."""
    out = rpb.Segment(author=a.author, log=a.log)
    if a.first_seq_no == b.first_seq_no:
        if a.first_checksum != b.first_checksum:
            raise SegmentError(
                "segment.first_checksum",
                f"{b.first_checksum:#x} differs from {a.first_checksum:#x} at the same "
                f"first_seq_no {a.first_seq_no} ({describe(a)})",
            )
        out.first_seq_no, out.first_checksum = a.first_seq_no, a.first_checksum
        out.first_offset = max(a.first_offset, b.first_offset)
    else:
        lo = a if a.first_seq_no < b.first_seq_no else b
        out.first_seq_no, out.first_checksum = lo.first_seq_no, lo.first_checksum
        out.first_offset = lo.first_offset
    if a.last_seq_no == b.last_seq_no:
        out.last_seq_no = a.last_seq_no
        out.last_offset = a.last_offset or b.last_offset
    else:
        hi = a if a.last_seq_no > b.last_seq_no else b
        out.last_seq_no, out.last_offset = hi.last_seq_no, hi.last_offset
    return out


class SegmentSet:
    """Segments sorted by seq_no, non-overlapping, with per-log offset order."""

    def __init__(self, segments: list[rpb.Segment] | None = None) -> None:
        self._segments: list[rpb.Segment] = []
        for seg in segments or []:
            self.add(seg)

    def __len__(self) -> int:
        return len(self._segments)

    def __iter__(self) -> Iterator[rpb.Segment]:
        return iter(self._segments)

    def __getitem__(self, index: int) -> rpb.Segment:
        return self._segments[index]

    def __repr__(self) -> str:
        return f"SegmentSet([{', '.join(describe(s) for s in self._segments)}])"

    def segments(self) -> list[rpb.Segment]:
        """A copy of the segments, in order."""
        return [_copy(s) for s in self._segments]

    def pop_front(self) -> rpb.Segment:
        """Remove and return the first segment."""
        return self._segments.pop(0)

    def add(self, segment: rpb.Segment) -> None:
        """Add `segment`, merging as docs/design/recoverylog.md#segments says.

        SegmentError leaves the set unchanged.
        """
        validate_segment(segment)
        merged = _copy(segment)
        keep: list[rpb.Segment] = []
        for cur in self._segments:
            same = cur.author == merged.author and cur.log == merged.log
            if same and _touches(cur, merged):
                merged = merge(cur, merged)
            elif _overlaps(cur, merged):
                raise SegmentError(
                    "segment", f"{describe(segment)} overlaps {describe(cur)} of another "
                    "author or log",
                )
            else:
                keep.append(cur)
        keep.append(merged)
        keep.sort(key=lambda s: s.first_seq_no)
        _check_order(keep)
        self._segments = keep


def _copy(seg: rpb.Segment) -> rpb.Segment:
    out = rpb.Segment()
    out.CopyFrom(seg)
    return out


def _check_order(segments: list[rpb.Segment]) -> None:
    """Per-log offsets must not decrease; only a trailing run may have last_offset 0."""
    last_by_log: dict[str, rpb.Segment] = {}
    unbounded: rpb.Segment | None = None
    for seg in segments:
        prev = last_by_log.get(seg.log)
        if prev is not None and (
            seg.first_offset < prev.first_offset
            or (seg.last_offset and prev.last_offset > seg.last_offset)
        ):
            raise SegmentError(
                "segment", f"offsets of {describe(seg)} go back before {describe(prev)}"
            )
        if unbounded is not None and seg.last_offset != 0:
            raise SegmentError(
                "segment", f"{describe(seg)} follows {describe(unbounded)} whose "
                "last_offset is unknown (0); only a trailing run may be unbounded",
            )
        if seg.last_offset == 0:
            unbounded = seg
        last_by_log[seg.log] = seg
