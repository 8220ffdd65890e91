"""Go's spool counters move as the spool transitions: commits, roll-backs and rolls."""

from __future__ import annotations

from pathlib import Path

from gazette_core.broker import metrics
from gazette_core.broker.fragment.spool import Spool
from gazette_core.broker.protocol import protocol_pb2 as pb

COUNTERS = (metrics.SPOOL_COMMITS, metrics.SPOOL_COMMIT_BYTES, metrics.SPOOL_ROLLBACKS,
            metrics.SPOOL_ROLLBACK_BYTES, metrics.SPOOL_COMPLETED)


def counts() -> list[float]:
    return [cell.value for cell in COUNTERS]


def moved(before: list[float]) -> list[float]:
    return [now - then for now, then in zip(counts(), before, strict=True)]


def propose(spool: Spool, fragment: pb.Fragment) -> pb.ReplicateResponse:
    response, _ = spool.apply(pb.ReplicateRequest(proposal=fragment,
                                                  registers=spool.registers))
    return response


def test_commits_rollbacks_and_rolls_are_counted(tmp_path: Path) -> None:
    spool = Spool("a/journal", str(tmp_path))
    before = counts()
    spool.apply(pb.ReplicateRequest(content=b"hello", content_delta=0))
    assert propose(spool, spool.proposal_with_delta()) == pb.ReplicateResponse()
    assert moved(before) == [1, 5, 0, 0, 0]

    spool.apply(pb.ReplicateRequest(content=b"dropped", content_delta=0))
    assert propose(spool, spool.fragment) == pb.ReplicateResponse()  # the committed one
    assert propose(spool, spool.fragment) == pb.ReplicateResponse()  # nothing to roll back
    assert moved(before) == [1, 5, 1, 7, 0]

    roll = spool.roll_proposal(spool.fragment.end, pb.NONE)
    assert propose(spool, roll) == pb.ReplicateResponse()
    assert propose(spool, spool.roll_proposal(spool.fragment.end, pb.NONE)) == (
        pb.ReplicateResponse())  # an empty spool rolls without completing one
    assert moved(before) == [1, 5, 1, 7, 1]
