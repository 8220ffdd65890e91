"""Every row of the spool transition table, with whole responses compared."""

from __future__ import annotations

import hashlib

import pytest

from gazette_core.broker.fragment.spool import Spool, SpoolError
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.fragment_ext import sha1_to_sum

JOURNAL = "a/journal"
OK = pb.ReplicateResponse()


def _labels(**values: str) -> pb.LabelSet:
    return pb.LabelSet(labels=[pb.Label(name=k, value=v) for k, v in sorted(values.items())])


def _content(data: bytes, delta: int) -> pb.ReplicateRequest:
    return pb.ReplicateRequest(content=data, content_delta=delta)


def _propose(fragment: pb.Fragment, registers: pb.LabelSet | None = None) -> pb.ReplicateRequest:
    return pb.ReplicateRequest(
        proposal=fragment, registers=registers or pb.LabelSet(), acknowledge=True
    )


def _fragment(begin: int, end: int, content: bytes = b"", codec: int = pb.NONE) -> pb.Fragment:
    digest = pb.SHA1Sum() if begin == end else sha1_to_sum(hashlib.sha1(content).digest())
    return pb.Fragment(
        journal=JOURNAL, begin=begin, end=end, sum=digest, compression_codec=codec
    )


def _committed_spool(content: bytes, registers: pb.LabelSet, tmp: str) -> Spool:
    spool = Spool(JOURNAL, tmp)
    spool.apply(_content(content, 0))
    assert spool.apply(_propose(spool.proposal_with_delta(), registers)) == (OK, None)
    return spool


@pytest.fixture
def tmp(tmp_path: object) -> str:
    return str(tmp_path)


def test_new_spool_is_empty_at_zero(tmp: str) -> None:
    spool = Spool(JOURNAL, tmp)
    assert spool.fragment == _fragment(0, 0)
    assert spool.registers == pb.LabelSet()
    assert (spool.delta, spool.first_append_time, spool.content_length()) == (0, None, 0)
    assert spool.proposal_with_delta() == _fragment(0, 0)


def test_content_extends_delta_and_commit_adopts_proposal(tmp: str) -> None:
    spool = Spool(JOURNAL, tmp)
    assert spool.apply(_content(b"hello ", 0)) == (OK, None)
    assert spool.apply(_content(b"world", 6)) == (OK, None)
    assert spool.delta == 11
    proposal = spool.proposal_with_delta()
    assert proposal == _fragment(0, 11, b"hello world")

    assert spool.apply(_propose(proposal, _labels(reg="one"))) == (OK, None)
    assert spool.fragment == _fragment(0, 11, b"hello world")
    assert spool.registers == _labels(reg="one")
    assert spool.delta == 0
    assert spool.first_append_time is not None
    assert spool.read_at(0, 100) == b"hello world"
    assert spool.read_at(6, 3) == b"wor"


def test_sum_covers_whole_fragment_across_commits(tmp: str) -> None:
    spool = _committed_spool(b"first;", _labels(), tmp)
    first_time = spool.first_append_time
    spool.apply(_content(b"second;", 0))
    proposal = spool.proposal_with_delta()
    assert proposal == _fragment(0, 13, b"first;second;")
    assert spool.apply(_propose(proposal)) == (OK, None)
    assert spool.fragment == _fragment(0, 13, b"first;second;")
    assert spool.first_append_time == first_time
    assert spool.read_at(0, 13) == b"first;second;"


def test_content_delta_mismatch_raises(tmp: str) -> None:
    spool = Spool(JOURNAL, tmp)
    spool.apply(_content(b"abc", 0))
    with pytest.raises(SpoolError) as exc:
        spool.apply(_content(b"def", 2))
    assert str(exc.value) == "invalid content_delta 2 (expected 3) for journal 'a/journal'"
    assert spool.delta == 3


def test_proposal_of_current_fragment_rolls_back_delta(tmp: str) -> None:
    spool = _committed_spool(b"kept", _labels(reg="r"), tmp)
    spool.apply(_content(b"discarded", 0))
    assert spool.apply(_propose(_fragment(0, 4, b"kept"), _labels(reg="r"))) == (OK, None)
    assert spool.delta == 0
    assert spool.fragment == _fragment(0, 4, b"kept")
    # The running digest was restored: a new delta commits with the right sum.
    spool.apply(_content(b"+more", 0))
    assert spool.proposal_with_delta() == _fragment(0, 9, b"kept+more")
    assert spool.apply(_propose(spool.proposal_with_delta(), _labels(reg="r"))) == (OK, None)
    assert spool.read_at(0, 100) == b"kept+more"


def test_proposal_of_current_fragment_without_delta_is_a_no_op(tmp: str) -> None:
    spool = _committed_spool(b"same", _labels(), tmp)
    assert spool.apply(_propose(_fragment(0, 4, b"same"))) == (OK, None)
    assert spool.fragment == _fragment(0, 4, b"same")


def test_proposal_with_wrong_sum_is_a_mismatch(tmp: str) -> None:
    spool = _committed_spool(b"abc", _labels(reg="r"), tmp)
    spool.apply(_content(b"def", 0))
    response, completed = spool.apply(_propose(_fragment(0, 6, b"abcxyz"), _labels(reg="r")))
    assert response == pb.ReplicateResponse(
        status=pb.PROPOSAL_MISMATCH, fragment=_fragment(0, 3, b"abc"), registers=_labels(reg="r")
    )
    assert completed is None
    assert spool.delta == 3


def test_current_fragment_with_other_registers_is_a_mismatch(tmp: str) -> None:
    spool = _committed_spool(b"abc", _labels(reg="r"), tmp)
    response, _ = spool.apply(_propose(_fragment(0, 3, b"abc"), _labels(reg="other")))
    assert response == pb.ReplicateResponse(
        status=pb.PROPOSAL_MISMATCH, fragment=_fragment(0, 3, b"abc"), registers=_labels(reg="r")
    )


def test_proposal_behind_end_is_a_mismatch(tmp: str) -> None:
    spool = _committed_spool(b"abcdef", _labels(), tmp)
    response, completed = spool.apply(_propose(_fragment(0, 3, b"abc")))
    assert response == pb.ReplicateResponse(
        status=pb.PROPOSAL_MISMATCH, fragment=_fragment(0, 6, b"abcdef"), registers=pb.LabelSet()
    )
    assert completed is None


def test_roll_forward_completes_spool_and_adopts_registers(tmp: str) -> None:
    spool = _committed_spool(b"old content", _labels(reg="old"), tmp)
    spool.apply(_content(b"uncommitted", 0))
    proposal = _fragment(100, 100, codec=pb.GZIP)

    response, completed = spool.apply(_propose(proposal, _labels(reg="new")))
    assert response == OK
    assert spool.fragment == proposal
    assert spool.registers == _labels(reg="new")
    assert (spool.delta, spool.first_append_time, spool.content_length()) == (0, None, 0)

    assert completed is not None and completed is not spool
    assert completed.fragment == _fragment(0, 11, b"old content")
    assert completed.registers == _labels(reg="old")
    assert completed.read_at(0, 100) == b"old content"
    assert completed.file.read_at(4, 7) == b"content"


def test_roll_to_current_end_changes_codec_and_keeps_registers(tmp: str) -> None:
    spool = _committed_spool(b"abc", _labels(reg="r"), tmp)
    response, completed = spool.apply(_propose(_fragment(3, 3, codec=pb.SNAPPY), _labels(reg="r")))
    assert response == OK
    assert completed is not None and completed.fragment == _fragment(0, 3, b"abc")
    assert spool.fragment == _fragment(3, 3, codec=pb.SNAPPY)


def test_roll_to_current_end_with_other_registers_then_mismatches(tmp: str) -> None:
    spool = _committed_spool(b"abc", _labels(reg="r"), tmp)
    response, completed = spool.apply(_propose(_fragment(3, 3, codec=pb.ZSTANDARD), _labels()))
    assert response == pb.ReplicateResponse(
        status=pb.PROPOSAL_MISMATCH,
        fragment=_fragment(3, 3, codec=pb.ZSTANDARD),
        registers=_labels(reg="r"),
    )
    assert completed is not None and completed.fragment == _fragment(0, 3, b"abc")


def test_roll_of_empty_spool_returns_nothing(tmp: str) -> None:
    spool = Spool(JOURNAL, tmp)
    spool.apply(_content(b"never committed", 0))
    assert spool.apply(_propose(_fragment(50, 50), _labels(reg="r"))) == (OK, None)
    assert spool.fragment == _fragment(50, 50)
    assert spool.registers == _labels(reg="r")
    assert spool.delta == 0
    spool.apply(_content(b"xyz", 0))
    assert spool.apply(_propose(spool.proposal_with_delta(), _labels(reg="r"))) == (OK, None)
    assert spool.fragment == _fragment(50, 53, b"xyz")
    assert spool.read_at(50, 10) == b"xyz"


def test_non_empty_proposal_beyond_end_rolls_then_mismatches(tmp: str) -> None:
    spool = _committed_spool(b"abc", _labels(), tmp)
    response, completed = spool.apply(_propose(_fragment(50, 200, b"elsewhere"), _labels(x="y")))
    assert response == pb.ReplicateResponse(
        status=pb.PROPOSAL_MISMATCH, fragment=_fragment(200, 200), registers=_labels(x="y")
    )
    assert completed is not None and completed.fragment == _fragment(0, 3, b"abc")


def test_proposal_within_delta_does_not_roll(tmp: str) -> None:
    spool = Spool(JOURNAL, tmp)
    spool.apply(_content(b"12345", 0))
    response, completed = spool.apply(_propose(_fragment(5, 5)))
    assert response == pb.ReplicateResponse(
        status=pb.PROPOSAL_MISMATCH, fragment=_fragment(0, 0), registers=pb.LabelSet()
    )
    assert completed is None
    assert spool.delta == 5


def test_rolled_fragment_stays_readable_while_live_spool_continues(tmp: str) -> None:
    spool = _committed_spool(b"first fragment", _labels(), tmp)
    old_file = spool.file
    _, completed = spool.apply(_propose(_fragment(14, 14)))
    spool.apply(_content(b"second", 0))
    spool.apply(_propose(spool.proposal_with_delta()))
    assert spool.file is not old_file
    assert old_file.read_at(0, 14) == b"first fragment"
    assert completed is not None and completed.read_at(6, 8) == b"fragment"
    assert spool.read_at(14, 100) == b"second"


def test_read_outside_fragment_and_after_close(tmp: str) -> None:
    spool = _committed_spool(b"abc", _labels(), tmp)
    with pytest.raises(ValueError) as exc:
        spool.read_at(4, 1)
    assert str(exc.value) == "offset 4 is outside the spool fragment [0, 3) of 'a/journal'"
    spool.close()
    with pytest.raises(SpoolError) as closed:
        spool.read_at(0, 1)
    assert str(closed.value) == "spool is closed"


def test_large_content_sum_matches_hashlib(tmp: str) -> None:
    spool = Spool(JOURNAL, tmp)
    chunk = bytes(range(256)) * 256
    for i in range(16):
        spool.apply(_content(chunk, i * len(chunk)))
    whole = chunk * 16
    assert spool.proposal_with_delta().sum == sha1_to_sum(hashlib.sha1(whole).digest())
    spool.apply(_propose(spool.proposal_with_delta()))
    assert spool.read_at(0, len(whole)) == whole
