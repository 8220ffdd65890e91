"""Pipeline synchronisation: bring every replica's spool to one agreed fragment.

The primary proposes its current fragment. Peers that are ahead (a larger
end, e.g. after a fail-over) or at the same end with an empty fragment answer
PROPOSAL_MISMATCH; the primary then rolls everyone to the furthest end,
adopting the registers of the peer that was furthest ahead (docs/design/append.md#replication).
A peer whose Route is newer answers WRONG_ROUTE: the caller waits for that
Etcd revision and builds a new pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass

from gazette_core.broker.pipeline import Pipeline, PipelineError
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.route_ext import route_equivalent

MAX_ROUNDS = 4


@dataclass
class SyncResult:
    """Revision the caller must wait for before retrying with a new pipeline (0: in sync)."""

    wait_revision: int = 0


async def synchronize(pipeline: Pipeline, codec: int) -> SyncResult:
    """Open the pipeline's streams with a proposal and roll until all replicas agree."""
    spool = pipeline.replica.spool
    responses = await pipeline.propose(spool.fragment, spool.registers, opening=True)
    for _ in range(MAX_ROUNDS):
        peers = responses[1:]
        if all(r.status == pb.OK for r in responses):
            return SyncResult()
        newer = _newer_route(pipeline, peers)
        if newer:
            return SyncResult(wait_revision=newer)
        offset, registers = _roll_target(pipeline, peers)
        responses = await pipeline.propose(spool.roll_proposal(offset, codec), registers)
    raise PipelineError(f"replicas of {pipeline.replica.journal} did not converge: "
                        f"{[pb.Status.Name(r.status) for r in responses]}")


def _newer_route(pipeline: Pipeline, peers: list[pb.ReplicateResponse]) -> int:
    for resp in peers:
        if resp.status != pb.WRONG_ROUTE:
            continue
        if (not route_equivalent(resp.header.route, pipeline.route)
                and resp.header.etcd.revision > pipeline.header.etcd.revision):
            return int(resp.header.etcd.revision)
        raise PipelineError(f"peer {resp.header.process_id.suffix} disagrees with route "
                            f"at revision {resp.header.etcd.revision}")
    return 0


def _roll_target(pipeline: Pipeline, peers: list[pb.ReplicateResponse]
                 ) -> tuple[int, pb.LabelSet]:
    """Where to roll: the furthest peer ahead (with its registers), or an empty peer at our end."""
    spool = pipeline.replica.spool
    end = spool.fragment.end
    ahead = [r for r in peers if r.status == pb.PROPOSAL_MISMATCH and r.fragment.end > end]
    if ahead:
        best = max(ahead, key=lambda r: r.fragment.end)
        return best.fragment.end, best.registers
    for resp in peers:
        if resp.status not in (pb.OK, pb.PROPOSAL_MISMATCH):
            raise PipelineError(f"peer answered {pb.Status.Name(resp.status)} to a sync")
    empty_at_end = [r for r in peers if r.status == pb.PROPOSAL_MISMATCH
                    and r.fragment.end == end and r.fragment.begin == r.fragment.end]
    if empty_at_end:
        return end, spool.registers
    raise PipelineError(f"peer fragment behind ours cannot be reconciled: {peers}")
