"""The safety rule of recovery-log pruning, as pure functions (docs/design/recoverylog.md#pruning).

A recovery log may lose a fragment only when no stored hint set of any
selected shard could ever need it:

- every selected shard must have hints in its primary slot AND in every one
  of its `hint_backups` slots, each with live files; a shard missing one
  skips its own recovery log entirely (nothing of it is deleted);
- each hint set's live segments are taken with the LAST segment unbounded
  (`last_offset = 0`), since playback reads on past it to the write head;
- segments are keyed by their own log, so a shard whose history was forked
  from another shard's log keeps that other log's fragments too;
- a fragment is kept when it overlaps any segment of its log; a fragment
  overlapping none that is not yet persisted means some shard using the log
  is not selected: that log is aborted, nothing of it deleted.

`plan_segments` folds the shards' hints into per-log segments and skips;
`plan_log` classifies one log's fragments against its segments.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.consumer.recoverylog.hints import live_log_segments
from gazette_core.errors import ValidationError

Slot = tuple[str, "rpb.FSMHints | None"]
"""(slot name: "primary" or "backup.N", its hints or None when the slot is empty)"""


@dataclass
class ShardHints:
    """One selected shard: its own recovery log and every hint slot it has."""

    shard: str
    log: str
    slots: list[Slot] = field(default_factory=list)


@dataclass
class SegmentPlan:
    """Live segments per log (over all hint sets), and logs skipped with the reason."""

    segments: dict[str, list[rpb.Segment]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    shards: int = 0


@dataclass
class LogPlan:
    """One log's fragments classified: to delete, kept, or the reason the log is aborted."""

    log: str
    prunable: list[pb.Fragment] = field(default_factory=list)
    fragments: int = 0
    bytes_total: int = 0
    kept: int = 0
    bytes_kept: int = 0
    aborted: str = ""


def hinted_segments(hints: rpb.FSMHints) -> list[rpb.Segment]:
    """The hints' live segments (logs filled in), the last one made unbounded."""
    _, segment_set = live_log_segments(hints)
    out = []
    for seg in segment_set:
        copy = rpb.Segment()
        copy.CopyFrom(seg)
        out.append(copy)
    if out:
        out[-1].last_offset = 0
    return out


def slot_problem(slot: str, hints: rpb.FSMHints | None) -> str:
    """Why a hint slot cannot vouch for its log ("" when it can)."""
    if hints is None:
        return f"no {slot} hints"
    if not hints.live_nodes:
        return f"{slot} hints have no live files"
    return ""


def plan_segments(shards: Iterable[ShardHints]) -> SegmentPlan:
    """Fold every shard's hint sets into segments keyed by log; skip logs lacking hints."""
    plan = SegmentPlan()
    for shard in shards:
        plan.shards += 1
        if not shard.log:
            continue  # A shard without a recovery log has nothing to prune.
        found: list[rpb.Segment] = []
        for slot, hints in shard.slots:
            problem = slot_problem(slot, hints)
            if not problem:
                assert hints is not None
                try:
                    found.extend(hinted_segments(hints))
                except ValidationError as exc:
                    problem = f"{slot} hints are invalid: {exc}"
            if problem:
                plan.skipped.setdefault(shard.log, f"shard {shard.shard}: {problem}")
                found = []
                break
        for seg in found:
            plan.segments.setdefault(seg.log, []).append(seg)
    for log in plan.skipped:
        plan.segments.pop(log, None)
    return plan


def overlaps(seg: rpb.Segment, frag: pb.Fragment) -> bool:
    """Whether `frag` holds any byte of `seg` (an end or last_offset of 0 is unbounded)."""
    return ((frag.end == 0 or seg.first_offset < frag.end)
            and (seg.last_offset == 0 or seg.last_offset > frag.begin))


def is_persisted(frag: pb.Fragment) -> bool:
    return bool(frag.backing_store) and frag.mod_time != 0


def plan_log(log: str, segments: Sequence[rpb.Segment],
             fragments: Iterable[pb.Fragment]) -> LogPlan:
    """Classify `log`'s fragments against its live `segments` (of any shard's hints)."""
    plan = LogPlan(log)
    mine = [s for s in segments if s.log == log]
    for frag in fragments:
        size = frag.end - frag.begin
        plan.fragments += 1
        plan.bytes_total += size
        if not mine or any(overlaps(s, frag) for s in mine):
            plan.kept += 1
            plan.bytes_kept += size
        elif not is_persisted(frag):
            plan.aborted = (
                f"fragment {frag.begin}-{frag.end} of {log} is not persisted yet and no hinted "
                "segment covers it: the selector misses a shard that uses this log")
        else:
            plan.prunable.append(frag)
    if plan.aborted:
        plan.kept, plan.bytes_kept, plan.prunable = plan.fragments, plan.bytes_total, []
    return plan
