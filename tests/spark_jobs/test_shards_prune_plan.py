"""The shards prune safety rule (docs/design/recoverylog.md#pruning) as pure planning functions."""

from __future__ import annotations

import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from spark_jobs.shards_prune import Gathered, audit, slots_of, summarize
from spark_jobs.shards_prune_plan import (
    ShardHints,
    hinted_segments,
    overlaps,
    plan_log,
    plan_segments,
)

LOG_A = "logs/shard-a"
LOG_B = "logs/shard-b"


def seg(first_seq: int, last_seq: int, first: int, last: int, log: str = "",
        author: int = 7) -> rpb.Segment:
    return rpb.Segment(author=author, first_seq_no=first_seq, last_seq_no=last_seq,
                       first_offset=first, last_offset=last, log=log)


def hints(log: str, *nodes: tuple[int, list[rpb.Segment]]) -> rpb.FSMHints:
    return rpb.FSMHints(log=log, live_nodes=[
        rpb.FnodeSegments(fnode=fnode, segments=segs) for fnode, segs in nodes])


def frag(begin: int, end: int, log: str = LOG_A, persisted: bool = True) -> pb.Fragment:
    return pb.Fragment(journal=log, begin=begin, end=end, mod_time=100 if persisted else 0,
                       backing_store="file:///" if persisted else "",
                       sum=pb.SHA1Sum(part1=begin + 1), compression_codec=pb.NONE)


def shard(name: str, log: str, *slots: rpb.FSMHints | None) -> ShardHints:
    names = ["primary", *(f"backup.{i}" for i in range(len(slots) - 1))]
    return ShardHints(name, log, list(zip(names, slots, strict=True)))


# Two authors (a hand-off at offset 1200), so the segments do not merge.
RECENT = hints(LOG_A, (10, [seg(10, 12, 1000, 1200, author=7)]),
               (13, [seg(13, 20, 1200, 1500, author=8)]))


def test_last_segment_of_each_hint_set_is_unbounded() -> None:
    got = hinted_segments(RECENT)

    assert [(s.first_offset, s.last_offset, s.log) for s in got] == [
        (1000, 1200, LOG_A), (1200, 0, LOG_A)]


def test_hinted_segments_leave_the_hints_unchanged() -> None:
    h = hints(LOG_A, (10, [seg(10, 12, 1000, 1200)]))

    hinted_segments(h)

    assert h.live_nodes[0].segments[0].last_offset == 1200


@pytest.mark.parametrize(("begin", "end", "kept"), [
    (0, 1000, False),     # ends where the segment starts
    (0, 1001, True),      # one byte into the segment
    (1199, 1300, True),   # overlaps the end
    (1200, 1300, False),  # starts where the segment ends
    (1000, 1200, True),   # exactly the segment
    (500, 0, True),       # an open fragment (end 0) from before the segment
])
def test_overlap_is_half_open_on_both_sides(begin: int, end: int, kept: bool) -> None:
    assert overlaps(seg(1, 2, 1000, 1200, LOG_A), frag(begin, end)) is kept


def test_an_unbounded_segment_keeps_everything_after_its_start() -> None:
    assert overlaps(seg(1, 2, 1000, 0, LOG_A), frag(10**9, 10**9 + 10))
    assert not overlaps(seg(1, 2, 1000, 0, LOG_A), frag(0, 1000))


def test_hints_covering_recent_segments_prune_exactly_the_older_fragments() -> None:
    plan = plan_segments([shard("a", LOG_A, RECENT, RECENT)])
    fragments = [frag(0, 400), frag(400, 1000), frag(1000, 1300), frag(1300, 1600),
                 frag(1600, 2000), frag(2000, 2100, persisted=False)]

    got = plan_log(LOG_A, plan.segments[LOG_A], fragments)

    assert [(f.begin, f.end) for f in got.prunable] == [(0, 400), (400, 1000)]
    assert (got.fragments, got.bytes_total, got.kept, got.bytes_kept) == (6, 2100, 4, 1100)
    assert got.aborted == ""


def test_every_slot_must_have_hints_or_the_log_is_skipped() -> None:
    plan = plan_segments([shard("a", LOG_A, RECENT, RECENT, None),
                          shard("b", LOG_B, hints(LOG_B, (1, [seg(1, 2, 0, 50)])))])

    assert plan.skipped == {LOG_A: "shard a: no backup.1 hints"}
    assert list(plan.segments) == [LOG_B]
    assert plan.shards == 2


def test_a_missing_primary_skips_the_log() -> None:
    plan = plan_segments([shard("a", LOG_A, None, RECENT)])

    assert plan.skipped == {LOG_A: "shard a: no primary hints"}
    assert plan.segments == {}


def test_hints_without_live_files_skip_the_log() -> None:
    plan = plan_segments([shard("a", LOG_A, RECENT, rpb.FSMHints(log=LOG_A))])

    assert plan.skipped == {LOG_A: "shard a: backup.0 hints have no live files"}
    assert plan.segments == {}


def test_invalid_hints_skip_the_log() -> None:
    out_of_order = hints(LOG_A, (13, [seg(13, 14, 0, 10)]), (10, [seg(10, 11, 10, 20)]))

    plan = plan_segments([shard("a", LOG_A, out_of_order)])

    assert plan.skipped[LOG_A].startswith("shard a: primary hints are invalid: ")
    assert plan.segments == {}


def test_a_shard_without_a_recovery_log_adds_nothing() -> None:
    plan = plan_segments([ShardHints("a", "", [("primary", None)])])

    assert (plan.shards, plan.segments, plan.skipped) == (1, {}, {})


def test_older_backup_hints_keep_the_older_fragments_too() -> None:
    older = hints(LOG_A, (3, [seg(3, 5, 300, 500)]))
    plan = plan_segments([shard("a", LOG_A, RECENT, older)])

    got = plan_log(LOG_A, plan.segments[LOG_A],
                   [frag(0, 300), frag(300, 600), frag(600, 900), frag(900, 1100)])

    # backup.0 covers 300.. unbounded (its last segment): nothing after 300 goes.
    assert [(f.begin, f.end) for f in got.prunable] == [(0, 300)]


def test_segments_in_a_forked_log_keep_that_logs_fragments() -> None:
    # Shard b's history starts in shard a's log (a fork), then continues in its own.
    forked = hints(LOG_B, (1, [seg(1, 4, 200, 400, log=LOG_A, author=5),
                               seg(5, 9, 0, 300, author=6)]))
    plan = plan_segments([shard("a", LOG_A, RECENT), shard("b", LOG_B, forked)])

    assert sorted(plan.segments) == [LOG_A, LOG_B]
    got = plan_log(LOG_A, plan.segments[LOG_A],
                   [frag(0, 200), frag(200, 400), frag(400, 1000), frag(1000, 1300)])

    assert [(f.begin, f.end) for f in got.prunable] == [(0, 200), (400, 1000)]


def test_a_skipped_log_stays_skipped_even_when_a_fork_references_it() -> None:
    forked = hints(LOG_B, (1, [seg(1, 4, 200, 400, log=LOG_A, author=5),
                               seg(5, 9, 0, 300, author=6)]))

    plan = plan_segments([shard("a", LOG_A, None), shard("b", LOG_B, forked)])

    assert LOG_A in plan.skipped
    assert sorted(plan.segments) == [LOG_B]


def test_an_unpersisted_fragment_outside_every_segment_aborts_the_log() -> None:
    plan = plan_segments([shard("a", LOG_A, RECENT)])

    got = plan_log(LOG_A, plan.segments[LOG_A],
                   [frag(0, 400), frag(400, 1000, persisted=False), frag(1000, 1300)])

    assert got.prunable == []
    assert "400-1000" in got.aborted and "misses a shard" in got.aborted
    assert (got.kept, got.bytes_kept) == (3, 1300)


def test_an_unpersisted_fragment_inside_a_segment_is_simply_kept() -> None:
    plan = plan_segments([shard("a", LOG_A, RECENT)])

    got = plan_log(LOG_A, plan.segments[LOG_A],
                   [frag(0, 400), frag(1000, 3000, persisted=False)])

    assert [(f.begin, f.end) for f in got.prunable] == [(0, 400)]
    assert got.aborted == ""


def test_a_log_without_segments_keeps_everything() -> None:
    got = plan_log(LOG_A, [], [frag(0, 400), frag(400, 800)])

    assert (got.prunable, got.kept) == ([], 2)


def test_slots_name_primary_then_each_backup_and_count_unanswered_as_empty() -> None:
    spec = cpb.ShardSpec(id="a", hint_backups=3)
    resp = cpb.GetHintsResponse(
        primary_hints=cpb.GetHintsResponse.ResponseHints(hints=RECENT),
        backup_hints=[cpb.GetHintsResponse.ResponseHints(hints=RECENT),
                      cpb.GetHintsResponse.ResponseHints()])

    got = slots_of(spec, resp)

    assert [(name, h is not None) for name, h in got] == [
        ("primary", True), ("backup.0", True), ("backup.1", False), ("backup.2", False)]


def test_summary_counts_each_outcome_and_keeps_an_audit_line_per_deletion() -> None:
    gathered = Gathered(shards=3, tasks={LOG_A: [], LOG_B: [], "logs/d": []},
                        skipped={"logs/c": "shard c: no primary hints"}, stores={})
    records = [
        {"kind": "log", "log": LOG_A, "fragments": 4, "bytes_total": 400, "aborted": ""},
        audit(frag(0, 100), "pruned", ""),
        audit(frag(100, 200), "permission_denied", "denied"),
        audit(frag(200, 250), "gone", ""),
        {"kind": "log", "log": LOG_B, "fragments": 2, "bytes_total": 50,
         "aborted": "not persisted"},
        {"kind": "log", "log": "logs/d", "error": "listing fragments of logs/d: gone"},
    ]

    s = summarize(gathered, records, dry_run=False)

    # In the order the JSON line has always had its keys.
    assert list(s.as_dict().items()) == list({
        "shards": 3, "logs": 3, "logs_skipped": 1, "logs_aborted": 2, "fragments": 6,
        "fragments_pruned": 1, "fragments_kept": 4, "already_gone": 1, "permission_denied": 1,
        "failed": 0, "bytes_total": 450, "bytes_pruned": 100, "bytes_kept": 300,
        "bytes_already_gone": 50, "dry_run": False, "errors": ["denied"],
        "skipped": [{"log": "logs/c", "reason": "shard c: no primary hints"}],
        "aborted": [{"log": "logs/d", "reason": "listing fragments of logs/d: gone"},
                    {"log": LOG_B, "reason": "not persisted"}]}.items())
    assert [(a["fragment"][:len(LOG_A) + 17], a["outcome"]) for a in s.audits] == [
        (f"{LOG_A}/0000000000000000", "pruned"),
        (f"{LOG_A}/0000000000000064", "permission_denied"),
        (f"{LOG_A}/00000000000000c8", "gone")]
