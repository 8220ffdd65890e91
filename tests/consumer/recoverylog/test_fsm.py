"""FSM apply rules: every op kind, every named error, chain and segment tracking.

See docs/design/recoverylog.md#the-fsm.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.consumer.recoverylog.checksum import chain
from gazette_core.consumer.recoverylog.fsm import (
    FSM,
    ChecksumMismatchError,
    FnodeNotTrackedError,
    FSMError,
    LinkExistsError,
    NoSuchLinkError,
    PropertyExistsError,
    WrongSeqNoError,
)
from tests.consumer.recoverylog.support import LOG, Writer

AUTHOR = 0xAABB


def play(fsm: FSM, w: Writer) -> None:
    for op, body in w.ops:
        fsm.apply(op, body)


def test_fresh_fsm() -> None:
    for fsm in (FSM(), FSM(rpb.FSMHints()), FSM(rpb.FSMHints(log=LOG))):
        assert (fsm.next_seq_no, fsm.next_checksum) == (1, 0)
        assert not fsm.has_remaining_hints() and fsm.next_hinted_segment() is None
        assert fsm.links == {} and fsm.live_nodes == {} and fsm.properties == {}


def test_every_op_kind_applies_and_chains() -> None:
    w = Writer(AUTHOR)
    w.create("/a")  # Fnode 1
    w.write(1, 0, 100)
    w.link(1, "/b")
    w.create("/c")  # Fnode 4
    w.unlink(1, "/a")
    w.noop()
    w.prop("/IDENTITY", "id\n")
    w.unlink(4, "/c")  # Fnode 4 dies
    fsm = FSM()
    expected = 0
    for op, body in w.ops:
        fsm.apply(op, body)
        expected = chain(expected, body)
        assert fsm.next_checksum == expected
        assert fsm.last_log == LOG
    assert fsm.next_seq_no == 9
    assert fsm.links == {"/b": 1}
    assert fsm.live_nodes == {1: {"/b"}}
    assert fsm.properties == {"/IDENTITY": "id\n"}


def test_segments_track_exact_offsets_and_build_hints() -> None:
    w = Writer(AUTHOR)
    w.create("/a")
    w.create("/dead")
    w.write(1, 0, 10)
    w.unlink(2, "/dead")
    fsm = FSM()
    play(fsm, w)
    hints = fsm.build_hints(LOG)
    assert hints.log == LOG
    [node] = hints.live_nodes
    assert node.fnode == 1
    [seg] = node.segments
    assert (seg.author, seg.first_seq_no, seg.last_seq_no) == (AUTHOR, 1, 3)
    assert (seg.first_offset, seg.last_offset) == (0, w.ops[2][0].last_offset)
    assert seg.first_checksum == 0 and seg.log == ""
    other = fsm.build_hints("another/log")
    assert other.live_nodes[0].segments[0].log == LOG


def test_wrong_seq_no_and_checksum_do_not_advance() -> None:
    w = Writer(AUTHOR)
    op1, body1 = w.create("/a")
    op2, body2 = w.write(1, 0, 5)
    fsm = FSM()
    with pytest.raises(WrongSeqNoError) as err:
        fsm.apply(op2, body2)
    assert (err.value.expected, err.value.got) == (1, 2)
    fsm.apply(op1, body1)
    with pytest.raises(WrongSeqNoError):
        fsm.apply(op1, body1)  # a duplicate
    bad = rpb.RecordedOp()
    bad.CopyFrom(op2)
    bad.checksum ^= 1
    with pytest.raises(ChecksumMismatchError):
        fsm.apply(bad, body2)
    assert fsm.next_seq_no == 2
    fsm.apply(op2, body2)
    assert fsm.next_seq_no == 3


def test_checksum_chains_over_the_exact_body_read() -> None:
    w = Writer(AUTHOR)
    op1, body1 = w.create("/a")
    op2, body2 = w.noop()
    fsm = FSM()
    fsm.apply(op1, body1 + b"\x00")  # not the bytes the writer chained
    with pytest.raises(ChecksumMismatchError):
        fsm.apply(op2, body2)


def test_link_and_create_errors() -> None:
    w = Writer(AUTHOR)
    w.create("/a")
    w.prop("/P", "x")
    fsm = FSM()
    play(fsm, w)
    cases: list[tuple[Callable[[], tuple[rpb.RecordedOp, bytes]], type[FSMError]]] = [
        (lambda: w.create("/a"), LinkExistsError),
        (lambda: w.create("/P"), PropertyExistsError),
        (lambda: w.link(1, "/a"), LinkExistsError),
        (lambda: w.link(1, "/P"), PropertyExistsError),
        (lambda: w.prop("/a", "y"), LinkExistsError),
        (lambda: w.unlink(1, "/nope"), NoSuchLinkError),
    ]
    for make, error in cases:
        w.seq_no, w.checksum = fsm.next_seq_no, fsm.next_checksum  # re-sequence the writer
        op, body = make()
        with pytest.raises(error):
            fsm.apply(op, body)
        assert fsm.next_seq_no == op.seq_no
    assert fsm.links == {"/a": 1} and fsm.properties == {"/P": "x"}


def test_untracked_fnode_advances_but_raises() -> None:
    w = Writer(AUTHOR)
    w.create("/a")
    fsm = FSM()
    play(fsm, w)
    for op, body in (w.write(9, 0, 3), w.link(9, "/b"), w.unlink(9, "/a")):
        with pytest.raises(FnodeNotTrackedError):
            fsm.apply(op, body)
        assert fsm.next_seq_no == op.seq_no + 1
        assert fsm.next_checksum == chain(op.checksum, body)
    assert fsm.links == {"/a": 1}
