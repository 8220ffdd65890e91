"""FSM from hints: hinted authors and Fnodes, segment jumps, branched logs.

See docs/design/recoverylog.md#the-fsm.
"""

from __future__ import annotations

import pytest

from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.consumer.recoverylog.fsm import (
    FSM,
    ChecksumMismatchError,
    ExpectedHintedFnodeError,
    FnodeNotTrackedError,
    FSMError,
    NotHintedAuthorError,
    RemainingHintsError,
    WrongSeqNoError,
)
from tests.consumer.recoverylog.support import LOG, Writer

A, B = 0xA, 0xB


def state(fsm: FSM) -> tuple[object, ...]:
    return fsm.next_seq_no, fsm.next_checksum, fsm.links, fsm.live_nodes, fsm.properties


def replay(fsm: FSM, ops: list[tuple[rpb.RecordedOp, bytes]]) -> list[str]:
    """Apply every op as a player would, naming the rejection of each (or "")."""
    outcomes = []
    for op, body in ops:
        try:
            fsm.apply(op, body)
            outcomes.append("")
        except FSMError as exc:
            outcomes.append(type(exc).__name__)
    return outcomes


def handoff_log() -> tuple[Writer, Writer]:
    """Author A records, B takes over; fnode 3 dies with its unlink in a gap of the hints."""
    a = Writer(A)
    a.create("/keep")  # 1
    a.write(1, 0, 8)  # 2
    a.create("/tmp")  # 3: dead by the end
    a.write(1, 8, 8)  # 4
    b = Writer(B, seq_no=a.seq_no, checksum=a.checksum, offset=a.offset)
    b.noop()  # 5: the hand-off
    b.unlink(3, "/tmp")  # 6
    b.create("/other")  # 7
    b.write(7, 0, 4)  # 8
    b.write(1, 16, 4)  # 9
    return a, b


def test_hints_segments_jump_and_skip_dead_history() -> None:
    a, b = handoff_log()
    ops = a.ops + b.ops
    full = FSM()
    assert replay(full, ops) == [""] * 9
    hints = full.build_hints(LOG)
    segs = [(s.author, s.first_seq_no, s.last_seq_no) for n in hints.live_nodes for s in n.segments]
    assert segs == [(A, 1, 4), (B, 9, 9), (B, 7, 8)]

    fsm = FSM(hints)
    assert fsm.has_remaining_hints()
    first = fsm.next_hinted_segment()
    assert first is not None and (first.first_seq_no, first.log) == (1, LOG)
    outcomes = replay(fsm, ops)
    # 3 is a create the hints do not name; 5-6 fall in the gap the FSM jumps over.
    assert outcomes == ["", "", "FnodeNotTrackedError", "", "WrongSeqNoError",
                        "WrongSeqNoError", "", "", ""]
    assert not fsm.has_remaining_hints()
    assert state(fsm) == state(full)
    assert fsm.build_hints(LOG) == hints


def test_jump_sets_next_seq_no_and_checksum_from_the_segment() -> None:
    a, b = handoff_log()
    hints = FSM()
    replay(hints, a.ops + b.ops)
    fsm = FSM(hints.build_hints(LOG))
    replay(fsm, a.ops)
    assert (fsm.next_seq_no, fsm.next_checksum) == (7, b.ops[2][0].checksum)


def test_not_hinted_author() -> None:
    a, b = handoff_log()
    full = FSM()
    replay(full, a.ops + b.ops)
    fsm = FSM(full.build_hints(LOG))
    imposter = Writer(B)
    op, body = imposter.create("/keep")
    with pytest.raises(NotHintedAuthorError):
        fsm.apply(op, body)
    assert fsm.next_seq_no == 1


def test_expected_hinted_fnode() -> None:
    w = Writer(A)
    w.create("/a")
    hints = rpb.FSMHints(log=LOG)
    hints.live_nodes.add(fnode=1).segments.add(author=A, first_seq_no=1, last_seq_no=1)
    fsm = FSM(hints)
    other = Writer(A)
    op, body = other.write(1, 0, 1)  # seq_no 1 but not the create of hinted Fnode 1
    with pytest.raises(ExpectedHintedFnodeError):
        fsm.apply(op, body)
    assert fsm.next_seq_no == 1
    noop, noop_body = Writer(A).noop()
    with pytest.raises(ExpectedHintedFnodeError):
        fsm.apply(noop, noop_body)
    fsm.apply(*w.ops[0])
    assert fsm.live_nodes == {1: {"/a"}} and not fsm.has_remaining_hints()


def test_hinted_properties_are_set_and_kept() -> None:
    hints = rpb.FSMHints(log=LOG)
    hints.properties.add(path="/IDENTITY", content="x\n")
    fsm = FSM(hints)
    assert fsm.properties == {"/IDENTITY": "x\n"}
    assert fsm.build_hints(LOG).properties == hints.properties


def test_build_hints_refuses_while_hints_remain() -> None:
    a, b = handoff_log()
    full = FSM()
    replay(full, a.ops + b.ops)
    fsm = FSM(full.build_hints(LOG))
    with pytest.raises(RemainingHintsError, match="remaining unread hints"):
        fsm.build_hints(LOG)


def test_branched_log_two_authors_racing() -> None:
    """A zombie and a new author both write seq_no 3 and on; the first in the log wins."""
    base = Writer(A)
    base.create("/a")  # 1
    base.write(1, 0, 4)  # 2
    zombie = Writer(A, seq_no=3, checksum=base.checksum, offset=base.offset)
    winner = Writer(B, seq_no=3, checksum=base.checksum)
    winner.noop()  # 3: the hand-off lands first
    zombie.offset = winner.offset = base.offset + 100
    zombie.write(1, 4, 4)  # 3 again: a duplicate seq_no, older than expected
    zombie.write(1, 8, 4)  # 4 on the zombie's branch: wrong chain value
    winner.write(1, 4, 2)  # 4 on the winner's branch
    log = [*base.ops, winner.ops[0], *zombie.ops, winner.ops[1]]
    fsm = FSM()
    outcomes = replay(fsm, log)
    assert outcomes == ["", "", "", "WrongSeqNoError", "ChecksumMismatchError", ""]
    assert fsm.next_seq_no == 5
    hints = fsm.build_hints(LOG)
    assert [s.author for s in hints.live_nodes[0].segments] == [A, B]
    # From those hints, the zombie's ops are not the hinted author once B's segment is next.
    replayed = FSM(hints)
    outcomes = replay(replayed, log)
    # The hand-off no-op is in no Fnode's segment, so the FSM jumped past it.
    assert outcomes == ["", "", "WrongSeqNoError", "NotHintedAuthorError",
                        "NotHintedAuthorError", ""]
    assert state(replayed) == state(fsm)


def test_duplicate_and_chain_errors_carry_details() -> None:
    w = Writer(A)
    w.create("/a")
    fsm = FSM()
    fsm.apply(*w.ops[0])
    with pytest.raises(WrongSeqNoError) as err:
        fsm.apply(*w.ops[0])
    assert (err.value.expected, err.value.got) == (2, 1)
    op, body = w.noop()
    op.checksum = 0xDEADBEEF
    with pytest.raises(ChecksumMismatchError, match="0xdeadbeef"):
        fsm.apply(op, body)


def test_dead_create_after_last_hinted_fnode_is_not_tracked() -> None:
    """Fnode 3's unlink (seq_no 6) lies in a gap of the hints: it must never become live."""
    a, b = handoff_log()
    full = FSM()
    replay(full, a.ops + b.ops)
    hints = full.build_hints(LOG)
    del hints.live_nodes[1]  # only Fnode 1 hinted: its create is the last hinted Fnode
    fsm = FSM(hints)
    fsm.apply(*a.ops[0])
    fsm.apply(*a.ops[1])
    with pytest.raises(FnodeNotTrackedError):
        fsm.apply(*a.ops[2])
    assert 3 not in fsm.live_nodes and fsm.next_seq_no == 4
