"""The streaming source's planning over hand-made listings (pure functions, no I/O):
admission control, data loss, splits, and the offsets Spark checkpoints."""

from __future__ import annotations

import json

import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import ValidationError
from spark_jobs.source.stream_offsets import (
    Position,
    decode,
    encode,
    parse_starting,
    starting_offset,
)
from spark_jobs.source.stream_plan import (
    Journal,
    Loss,
    admit,
    lost_at_start,
    pruned_opens,
    readable_end,
    skip_loss,
    split_points,
)


def journal(name: str, *spans: tuple[int, int]) -> Journal:
    return Journal.listed(name, [pb.Fragment(journal=name, begin=b, end=e) for b, e in spans])


A = journal("a", (0, 400), (400, 800), (800, 1200))
B = journal("b", (0, 100), (100, 200))


def test_without_a_limit_every_journal_reads_to_its_end() -> None:
    assert admit({"a": A, "b": B}, {"a": 0, "b": 0}, {"a": 1200, "b": 200}, None) == {
        "a": 1200, "b": 200}


def test_the_limit_is_shared_fragment_by_fragment_largest_backlog_first() -> None:
    # a (1200 pending) goes first: 400, then b 100; a's next 400 does not fit, b's 100 does.
    assert admit({"a": A, "b": B}, {"a": 0, "b": 0}, {"a": 1200, "b": 200}, 600) == {
        "a": 400, "b": 200}
    assert admit({"a": A, "b": B}, {"a": 0, "b": 0}, {"a": 1200, "b": 200}, 500) == {
        "a": 400, "b": 100}
    assert admit({"a": A, "b": B}, {"a": 0, "b": 0}, {"a": 1200, "b": 200}, 1000) == {
        "a": 800, "b": 200}


def test_a_fragment_larger_than_the_limit_still_moves_the_query_on() -> None:
    assert admit({"a": A, "b": B}, {"a": 400, "b": 200}, {"a": 1200, "b": 200}, 10) == {
        "a": 800, "b": 200}


def test_a_gap_stops_reading_at_its_start_and_a_start_inside_it_is_lost() -> None:
    gappy = journal("g", (0, 100), (300, 400))

    assert readable_end(gappy, Position(0), None) == 100
    assert readable_end(gappy, Position(0), 50) == 50  # Trigger.AvailableNow's target.
    assert lost_at_start(gappy, Position(0)) is None
    assert lost_at_start(gappy, Position(100)) == Loss("g", 100, 300)
    assert skip_loss(Position(100), Loss("g", 100, 300)) == Position(300)


def test_an_open_transaction_whose_start_was_pruned_is_dropped_not_lost() -> None:
    pruned = journal("p", (300, 400), (400, 500))
    at = Position(400, (("0a", 5, 7, 250), ("0b", 3, 3, -1), ("0c", 2, 4, 350)))

    kept, dropped = pruned_opens(pruned, at)

    assert lost_at_start(pruned, at) is None  # Everything before 400 was read already.
    assert dropped == ["0a"]
    assert kept == Position(400, (("0a", 5, 5, -1), ("0b", 3, 3, -1), ("0c", 2, 4, 350)))
    assert kept.lowest_needed() == 350


def test_ranges_are_split_at_fragment_ends_of_about_split_bytes() -> None:
    assert split_points(A, 0, 1200, 400) == [400, 800]
    assert split_points(A, 0, 1200, 700) == [800]
    assert split_points(A, 0, 1200, 0) == []


def test_offsets_are_deterministic_json_and_decode_back() -> None:
    positions = {"b": Position(10, (("0b", 1, 2, 5), ("0a", 3, 3, -1))), "a": Position(0)}

    encoded = encode(positions)

    assert json.dumps(encoded) == (
        '{"journals": {"a": {"offset": 0, "producers": []}, "b": {"offset": 10, "producers": '
        '[["0a", 3, 3, -1], ["0b", 1, 2, 5]]}}}')
    assert decode(json.loads(json.dumps(encoded))) == {
        "a": Position(0), "b": Position(10, (("0a", 3, 3, -1), ("0b", 1, 2, 5)))}


def test_starting_offsets_earliest_latest_and_per_journal() -> None:
    per_journal = parse_starting('{"a": 300, "b": -1, "c": -2}')

    assert [starting_offset(per_journal, n, 100, 900) for n in "abcd"] == [300, 900, 100, 100]
    assert starting_offset(parse_starting("latest"), "a", 100, 900) == 900
    assert starting_offset(parse_starting("Earliest"), "a", 100, 900) == 100
    with pytest.raises(ValidationError, match="offset 901 of journal a is beyond its write"):
        starting_offset(per_journal | {"a": 901}, "a", 100, 900)


@pytest.mark.parametrize("text", ["newest", '{"a": "x"}', '{"a": -3}', "[1]"])
def test_bad_starting_offsets_are_one_line_naming_the_value(text: str) -> None:
    with pytest.raises(ValidationError) as refused:
        parse_starting(text)

    assert str(refused.value).startswith("option startingOffsets: ")
    assert repr(text) in str(refused.value) and "\n" not in str(refused.value)
