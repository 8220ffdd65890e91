"""CoverSet add/replace rules and "longest overlapping" lookup."""

from __future__ import annotations

from gazette_core.broker.fragment.cover_set import CoverSet, IndexEntry
from gazette_core.broker.protocol import protocol_pb2 as pb


def _entry(begin: int, end: int, store: str = "") -> IndexEntry:
    return IndexEntry(
        pb.Fragment(journal="a/journal", begin=begin, end=end, sum=pb.SHA1Sum(),
                    compression_codec=pb.NONE, backing_store=store)
    )


def _spans(cover: CoverSet) -> list[tuple[int, int, str]]:
    return [(e.fragment.begin, e.fragment.end, e.fragment.backing_store) for e in cover]


def test_adds_in_any_order_keep_offset_order() -> None:
    cover = CoverSet()
    for begin, end in [(20, 30), (0, 10), (10, 20), (40, 50)]:
        assert cover.add(_entry(begin, end))
    assert _spans(cover) == [(0, 10, ""), (10, 20, ""), (20, 30, ""), (40, 50, "")]
    assert (cover.begin_offset, cover.end_offset) == (0, 50)


def test_empty_fragment_is_ignored() -> None:
    cover = CoverSet([_entry(0, 10)])
    assert not cover.add(_entry(5, 5))
    assert _spans(cover) == [(0, 10, "")]


def test_contained_fragments_are_dropped() -> None:
    cover = CoverSet([_entry(10, 20)])
    assert not cover.add(_entry(12, 18))  # strictly inside
    assert not cover.add(_entry(10, 15))  # same begin, smaller end
    assert not cover.add(_entry(15, 20))  # same end, larger begin
    assert _spans(cover) == [(10, 20, "")]


def test_covering_fragment_replaces_everything_it_covers() -> None:
    cover = CoverSet([_entry(0, 10), _entry(10, 20), _entry(15, 25), _entry(30, 40)])
    assert cover.add(_entry(5, 25))
    assert _spans(cover) == [(0, 10, ""), (5, 25, ""), (30, 40, "")]


def test_identical_range_replaces_existing() -> None:
    cover = CoverSet([_entry(0, 10, "file:///first/"), _entry(10, 20, "file:///first/")])
    assert cover.add(_entry(10, 20, "file:///second/"))
    assert _spans(cover) == [(0, 10, "file:///first/"), (10, 20, "file:///second/")]


def test_overlapping_fragments_both_kept() -> None:
    cover = CoverSet([_entry(0, 10)])
    assert cover.add(_entry(5, 15))
    assert _spans(cover) == [(0, 10, ""), (5, 15, "")]


def test_lookup_prefers_fragment_extending_furthest() -> None:
    cover = CoverSet([_entry(0, 10), _entry(5, 15), _entry(8, 30), _entry(40, 50)])
    assert cover.lookup(0) == (0, True)
    assert cover.lookup(6) == (1, True)
    assert cover.lookup(9) == (2, True)
    assert cover.lookup(12) == (2, True)


def test_lookup_reports_next_fragment_when_not_covered() -> None:
    cover = CoverSet([_entry(10, 20), _entry(40, 50)])
    assert cover.lookup(5) == (0, False)
    assert cover.lookup(20) == (1, False)
    assert cover.lookup(50) == (2, False)
    assert CoverSet().lookup(0) == (0, False)


def test_covers_range_across_contiguous_fragments() -> None:
    cover = CoverSet([_entry(0, 10), _entry(10, 20), _entry(15, 30), _entry(35, 40)])
    assert cover.covers_range(2, 30)
    assert not cover.covers_range(2, 31)
    assert not cover.covers_range(30, 36)
