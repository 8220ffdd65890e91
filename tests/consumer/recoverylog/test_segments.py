"""Segment validation and SegmentSet merge rules (docs/design/recoverylog.md#segments)."""

from __future__ import annotations

import pytest

from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.consumer.recoverylog.segments import SegmentError, SegmentSet, validate_segment
from tests.consumer.recoverylog.support import LOG

OTHER = "recovery/logs/other"


def seg(first: int, last: int, *, author: int = 1, fo: int = 0, lo: int = 0, ck: int = 0,
        log: str = LOG) -> rpb.Segment:
    return rpb.Segment(author=author, first_seq_no=first, last_seq_no=last, first_offset=fo,
                       last_offset=lo, first_checksum=ck, log=log)


def spans(s: SegmentSet) -> list[tuple[int, int, int, int]]:
    return [(x.first_seq_no, x.last_seq_no, x.first_offset, x.last_offset) for x in s]


@pytest.mark.parametrize(("bad", "field"), [
    (seg(1, 1, author=0), "author"),
    (seg(0, 1), "first_seq_no"),
    (seg(1, 1, fo=-1), "first_offset"),
    (seg(3, 2), "last_seq_no"),
    (seg(1, 2, fo=10, lo=10), "last_offset"),
    (seg(1, 2, log="bad log name"), "log"),
    (seg(1, 2, log=""), "log"),
])
def test_invalid_segments(bad: rpb.Segment, field: str) -> None:
    with pytest.raises(SegmentError) as err:
        validate_segment(bad)
    assert err.value.path == f"segment.{field}"
    with pytest.raises(SegmentError):
        SegmentSet().add(bad)


def test_adjacent_and_overlapping_merge() -> None:
    s = SegmentSet([seg(1, 3, fo=0, lo=30), seg(4, 5, fo=30, lo=50)])
    assert spans(s) == [(1, 5, 0, 50)]
    s.add(seg(2, 4, fo=10, lo=40))  # inside: no change
    assert spans(s) == [(1, 5, 0, 50)]


def test_merge_bridges_several_segments() -> None:
    s = SegmentSet([seg(1, 2, fo=0, lo=20), seg(6, 7, fo=60, lo=70)])
    assert len(s) == 2
    s.add(seg(3, 5, fo=20, lo=60))
    assert spans(s) == [(1, 7, 0, 70)]


def test_equal_first_seq_no_prefers_larger_first_offset() -> None:
    s = SegmentSet([seg(4, 6, fo=10, ck=9)])
    s.add(seg(4, 5, fo=25, ck=9))
    assert spans(s) == [(4, 6, 25, 0)]


def test_equal_first_seq_no_with_another_checksum_is_an_error() -> None:
    s = SegmentSet([seg(4, 6, ck=9)])
    with pytest.raises(SegmentError, match="first_checksum"):
        s.add(seg(4, 5, ck=8))
    assert spans(s) == [(4, 6, 0, 0)]


def test_merge_fills_in_a_zero_last_offset() -> None:
    s = SegmentSet([seg(1, 5, fo=0, lo=0)])
    s.add(seg(1, 5, fo=0, lo=90))
    assert spans(s) == [(1, 5, 0, 90)]
    s.add(seg(2, 5, fo=10, lo=0))
    assert spans(s) == [(1, 5, 0, 90)]


def test_overlap_with_another_author_or_log_is_an_error() -> None:
    s = SegmentSet([seg(1, 5)])
    with pytest.raises(SegmentError, match="overlaps"):
        s.add(seg(5, 6, author=2))
    with pytest.raises(SegmentError, match="overlaps"):
        s.add(seg(3, 4, log=OTHER))
    assert spans(s) == [(1, 5, 0, 0)]


def test_adjacent_segments_of_other_authors_and_logs_stay_apart() -> None:
    s = SegmentSet([seg(1, 2, fo=0, lo=20), seg(5, 6, fo=40, author=2)])
    s.add(seg(3, 4, fo=0, log=OTHER))
    assert [(x.first_seq_no, x.author, x.log) for x in s] == [
        (1, 1, LOG), (3, 1, OTHER), (5, 2, LOG)
    ]


def test_offsets_within_a_log_must_not_decrease() -> None:
    s = SegmentSet([seg(1, 2, fo=100, lo=200)])
    with pytest.raises(SegmentError, match="go back"):
        s.add(seg(4, 5, fo=50, lo=300, author=2))
    s.add(seg(4, 5, fo=50, lo=300, author=2, log=OTHER))  # another log: its own order
    assert len(s) == 2


def test_only_a_trailing_run_may_be_unbounded() -> None:
    s = SegmentSet([seg(1, 2, fo=0, lo=0)])
    with pytest.raises(SegmentError, match="only a trailing run"):
        s.add(seg(5, 6, fo=10, lo=20, author=2))
    s.add(seg(5, 6, fo=10, lo=0, author=2))
    assert len(s) == 2
    assert [x.first_seq_no for x in s.segments()] == [1, 5]
    assert s.pop_front().first_seq_no == 1 and len(s) == 1
