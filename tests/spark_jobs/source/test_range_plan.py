"""How batch reads cut journals into ranges, without Spark or brokers: cuts at fragment
boundaries, offsets options resolved and checked, each range seeded with the states a scan
of the ranges before it leaves, and the client settings `read_journals` hands the source."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from gazette_core.broker.client.channel import ClientConfig
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import ValidationError
from gazette_core.server.client_auth import CallAuth
from gazette_core.server.tls import ClientTLS
from spark_jobs.decode.content import JSON, RAW, JournalTask
from spark_jobs.journals_frame import frame_options
from spark_jobs.source.options import (
    EARLIEST,
    LATEST,
    JournalOffsets,
    parse_offsets,
    read_options,
)
from spark_jobs.source.range_plan import check_journals, cut_points, journal_bounds, plan_ranges
from spark_jobs.source.range_read import ProducerState, RangeTask

J = "j/one"


def frag(begin: int, end: int) -> pb.Fragment:
    return pb.Fragment(journal=J, begin=begin, end=end, mod_time=1, backing_store="file:///")


FRAGMENTS = [frag(0, 100), frag(100, 250), frag(200, 300), frag(400, 500), frag(500, 600)]


def source(kind: str = JSON, fragments: list[pb.Fragment] = FRAGMENTS) -> JournalTask:
    return JournalTask(journal=J, kind=kind,
                       fragments=tuple(f.SerializeToString() for f in fragments))


def spans(task: RangeTask) -> list[tuple[int, int]]:
    return [(f.begin, f.end) for f in task.source.parsed()]


@pytest.mark.parametrize(("split", "begin", "end", "cuts"), [
    (0, 0, 600, [(0, 600)]),
    (1, 0, 600, [(0, 100), (100, 250), (250, 300), (300, 500), (500, 600)]),
    # Overlapping bytes count once; the pruned gap 300-400 holds none.
    (150, 0, 600, [(0, 250), (250, 500), (500, 600)]),
    (10_000, 0, 600, [(0, 600)]),
    # Offsets inside fragments: the first range starts there, the last ends there.
    (1, 50, 450, [(50, 100), (100, 250), (250, 300), (300, 450)]),
    (1, 600, 600, []),
])
def test_ranges_are_cut_at_fragment_ends_once_they_hold_split_bytes(
        split: int, begin: int, end: int, cuts: list[tuple[int, int]]) -> None:
    assert cut_points(FRAGMENTS, begin, end, split) == cuts


def test_offsets_resolve_to_the_content_and_past_its_end_is_refused() -> None:
    everything = journal_bounds(J, FRAGMENTS, JournalOffsets(EARLIEST), JournalOffsets(LATEST))
    pruned = journal_bounds(J, FRAGMENTS[3:], JournalOffsets(EARLIEST, {J: 20}),
                            JournalOffsets(LATEST, {J: 550}))
    nothing = journal_bounds(J, FRAGMENTS, JournalOffsets(LATEST), JournalOffsets(LATEST))

    assert (everything, pruned, nothing) == ((0, 600), (400, 550), (600, 600))
    with pytest.raises(ValidationError, match=r"^option endingOffsets: offset 700 of journal "
                                              r"j/one is past the end of its content, 600$"):
        journal_bounds(J, FRAGMENTS, JournalOffsets(), JournalOffsets(LATEST, {J: 700}))
    with pytest.raises(ValidationError, match=r"^option endingOffsets: journal j/one would end "
                                              r"at 100, before its start at 250$"):
        journal_bounds(J, FRAGMENTS, JournalOffsets(EARLIEST, {J: 250}),
                       JournalOffsets(LATEST, {J: 100}))


def test_offsets_options_parse_or_are_refused_in_one_line() -> None:
    assert parse_offsets(" Earliest ", "startingOffsets", EARLIEST) == JournalOffsets(EARLIEST)
    assert parse_offsets('{"a/b": 10, "c": -1}', "endingOffsets", LATEST) == JournalOffsets(
        LATEST, {"a/b": 10, "c": -1})
    for text in ("{3", "[1]", "oldest", '{"a": "10"}', '{"a": -3}', '{"a": true}'):
        with pytest.raises(ValidationError, match=r"^option startingOffsets: "):
            parse_offsets(text, "startingOffsets", EARLIEST)
    with pytest.raises(ValidationError, match="journal 'x' is not among the journals"):
        check_journals(JournalOffsets(EARLIEST, {J: 1, "x": 2}), [J], "startingOffsets")


def test_each_range_starts_from_the_states_the_scan_of_the_one_before_leaves() -> None:
    scanned: list[tuple[int, int, tuple[ProducerState, ...]]] = []

    def scan(task: RangeTask) -> tuple[ProducerState, ...]:
        scanned.append((task.begin, task.end, task.producers))
        # A transaction opened at 150 is still open where this range ends.
        return (("0a0b0c0d0e0f", 7, 9, 150),)

    tasks = plan_ranges([source()], starting=JournalOffsets(), ending=JournalOffsets(LATEST),
                        split_bytes=150, schema_json="", scan=scan)

    assert [(t.begin, t.end) for t in tasks] == [(0, 250), (250, 500), (500, 600)]
    assert [t.producers for t in tasks] == [(), *[(("0a0b0c0d0e0f", 7, 9, 150),)] * 2]
    # Every range but the last is scanned, each from the states before it.
    assert scanned == [(0, 250, ()), (250, 500, (("0a0b0c0d0e0f", 7, 9, 150),))]
    # Fragments cover the range and back to the open transaction's offset.
    assert spans(tasks[0]) == [(0, 100), (100, 250), (200, 300)]
    assert spans(tasks[1]) == [(100, 250), (200, 300), (400, 500)]
    assert spans(tasks[2]) == [(100, 250), (200, 300), (400, 500), (500, 600)]


def test_raw_ranges_need_no_scan_and_a_journal_started_mid_way_starts_afresh() -> None:
    def scan(task: RangeTask) -> tuple[ProducerState, ...]:
        raise AssertionError("raw journals have no producers to scan")

    raw = plan_ranges([source(RAW)], starting=JournalOffsets(), ending=JournalOffsets(LATEST),
                      split_bytes=1, schema_json="", scan=scan)
    started = plan_ranges([source()], starting=JournalOffsets(EARLIEST, {J: 250}),
                          ending=JournalOffsets(LATEST), split_bytes=0, schema_json="{}",
                          scan=scan)

    assert [(t.begin, t.end, t.producers) for t in raw] == [
        (0, 100, ()), (100, 250, ()), (250, 300, ()), (300, 500, ()), (500, 600, ())]
    assert [(t.begin, t.end, t.producers, t.schema_json) for t in started] == [
        (250, 600, (), "{}")]
    assert spans(started[0]) == [(200, 300), (400, 500), (500, 600)]


def test_tls_and_authorization_reach_the_read_options_tasks_are_planned_with() -> None:
    signed = ClientConfig(tls=ClientTLS("c.pem", "k.pem", "ca.pem"),
                          auth=CallAuth(key=b"sixteen byte key"))
    token = ClientConfig(auth=CallAuth(token="s3cret"))

    for client in (signed, token, None):
        options = frame_options("a=b", broker="https://b:1", client=client)
        assert read_options(options, streaming=False).client == client


def test_the_ranges_to_scan_are_announced_ahead_of_their_scans_in_order() -> None:
    announced: list[tuple[int, int]] = []

    def ahead(tasks: Sequence[RangeTask]) -> None:
        assert all(not t.producers for t in tasks)  # read before their states are known
        announced.extend((t.begin, t.end) for t in tasks)

    def scan(task: RangeTask) -> tuple[ProducerState, ...]:
        assert (task.begin, task.end) in announced
        return ()

    plan_ranges([source()], starting=JournalOffsets(), ending=JournalOffsets(LATEST),
                split_bytes=150, schema_json="", scan=scan, ahead=ahead)
    assert announced == [(0, 250), (250, 500)]
