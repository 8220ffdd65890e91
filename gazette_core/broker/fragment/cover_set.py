"""CoverSet: the fragments that together cover a journal's offsets, none inside another.

Invariant (docs/design/fragments.md#the-fragment-index): entries are ordered
by begin and by end, and no fragment is fully contained in another, so begins
and ends are both strictly increasing. That makes both "where does a fragment
go" and "which fragment covers an offset" binary searches over two parallel
offset lists.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass

from gazette_core.broker.fragment.spool_file import SpoolFile
from gazette_core.broker.protocol import protocol_pb2 as pb


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """A known fragment; `local` is the spool file holding its content, if held locally."""

    fragment: pb.Fragment
    local: SpoolFile | None = None


class CoverSet:
    """Ordered, non-nested fragments with "longest overlapping" lookup."""

    def __init__(self, entries: list[IndexEntry] | None = None) -> None:
        self._entries: list[IndexEntry] = []
        self._begins: list[int] = []
        self._ends: list[int] = []
        for entry in entries or ():
            self.add(entry)

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[IndexEntry]:
        return iter(self._entries)

    def __getitem__(self, index: int) -> IndexEntry:
        return self._entries[index]

    @property
    def begin_offset(self) -> int:
        """Begin of the first fragment (0 when empty)."""
        return self._begins[0] if self._begins else 0

    @property
    def end_offset(self) -> int:
        """End of the last fragment (0 when empty)."""
        return self._ends[-1] if self._ends else 0

    def add(self, entry: IndexEntry) -> bool:
        """Add `entry` unless it is empty or contained in an existing fragment.

        It replaces every fragment it covers, including one with the same
        begin and end. Returns whether the set changed.
        """
        begin, end = entry.fragment.begin, entry.fragment.end
        if begin >= end:
            return False
        # The first fragment ending at or after `end` is the only possible container.
        at = bisect.bisect_left(self._ends, end)
        if at < len(self._entries) and self._begins[at] <= begin:
            identical = self._begins[at] == begin and self._ends[at] == end
            if not identical:
                return False
        start = bisect.bisect_left(self._begins, begin)
        stop = bisect.bisect_right(self._ends, end)
        if start < stop:
            del self._entries[start:stop], self._begins[start:stop], self._ends[start:stop]
        self._entries.insert(start, entry)
        self._begins.insert(start, begin)
        self._ends.insert(start, end)
        return True

    def lookup(self, offset: int) -> tuple[int, bool]:
        """Index of the fragment for `offset` and whether it covers it.

        When covered, the index is the covering fragment extending furthest.
        When not, it is the first fragment beyond `offset` (== len when none).
        """
        at = bisect.bisect_right(self._ends, offset)
        if at == len(self._entries) or self._begins[at] > offset:
            return at, False
        # Begins increase, so the last fragment beginning at or before `offset` reaches furthest.
        return bisect.bisect_right(self._begins, offset) - 1, True

    def covers_range(self, begin: int, end: int) -> bool:
        """Whether contiguous fragments of this set cover all of [begin, end)."""
        offset = begin
        while offset < end:
            at, covered = self.lookup(offset)
            if not covered:
                return False
            offset = self._ends[at]
        return True
