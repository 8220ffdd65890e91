"""FSMHints: Go encoding/json byte compatibility, protobuf fallback, validation.

See docs/design/recoverylog.md#hints-in-etcd.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.consumer.recoverylog.fsm import FSM, HintsError
from gazette_core.consumer.recoverylog.hints import (
    decode_hints,
    encode_hints,
    live_log_segments,
    validate_hints,
)
from tests.consumer.recoverylog.support import LOG, Writer

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize("name", ["example.json", "recorder.json", "empty.json"])
def test_fixtures_decode_and_reencode_byte_for_byte(name: str) -> None:
    data = (FIXTURES / name).read_bytes()
    hints = decode_hints(data)
    assert encode_hints(hints) == data
    validate_hints(hints)
    FSM(hints)  # valid hints build an FSM


def test_example_fixture_fields() -> None:
    hints = decode_hints((FIXTURES / "example.json").read_bytes())
    first = hints.live_nodes[0].segments[0]
    assert (first.author, first.first_checksum, first.first_offset) == (3418428788, 2628272215,
                                                                         129100)
    assert hints.live_nodes[0].segments[1].log == ""  # implied: the hints log
    assert hints.properties[0].content == "\u2026\n"
    assert hints.properties[1].path == "/q<a&b>"
    fnodes, segments = live_log_segments(hints)
    assert fnodes == [1018, 1025]
    assert [(s.first_seq_no, s.last_seq_no, s.first_offset, s.last_offset, s.log)
            for s in segments] == [
        (1018, 1024, 129100, 130000, "examples/word-count/recovery-logs/shard-000-before-fork"),
        (1025, 1031, 100, 0, hints.log),
    ]


def test_empty_hints_and_omitempty() -> None:
    assert encode_hints(rpb.FSMHints()) == b'{"live_nodes":null,"properties":null}'
    node = rpb.FSMHints(log="a/b")
    node.live_nodes.add()
    node.properties.add()
    assert encode_hints(node) == b'{"log":"a/b","live_nodes":[{"segments":null}],"properties":[{}]}'


def test_live_nodes_are_sorted_on_encode() -> None:
    hints = rpb.FSMHints(log=LOG)
    for fnode in (9, 2, 5):
        hints.live_nodes.add(fnode=fnode).segments.add(author=1, first_seq_no=fnode,
                                                       last_seq_no=fnode)
    decoded = decode_hints(encode_hints(hints))
    assert [n.fnode for n in decoded.live_nodes] == [2, 5, 9]


def test_string_escapes_match_go() -> None:
    hints = rpb.FSMHints()
    hints.properties.add(path="/p", content='<>&"\\\n\r\t\b\f\x00\x1f\x7f\u2028\u2029é')
    expected = (b'{"live_nodes":null,"properties":[{"path":"/p","content":'
                b'"\\u003c\\u003e\\u0026\\"\\\\\\n\\r\\t\\b\\f\\u0000\\u001f\x7f'
                b'\\u2028\\u2029\xc3\xa9"}]}')
    assert encode_hints(hints) == expected
    assert decode_hints(expected) == hints


def test_round_trip_of_fsm_built_hints() -> None:
    w = Writer(0xFFFFFFFF)
    w.create("/000012.sst")
    w.write(1, 0, 1000)
    w.prop("/IDENTITY", "abc\n")
    fsm = FSM()
    for op, body in w.ops:
        fsm.apply(op, body)
    hints = fsm.build_hints(LOG)
    assert decode_hints(encode_hints(hints)) == hints


def test_binary_protobuf_is_accepted_when_first_byte_is_not_brace() -> None:
    hints = decode_hints((FIXTURES / "example.json").read_bytes())
    data = hints.SerializeToString()
    assert data[:1] != b"{"
    assert decode_hints(data) == hints
    assert decode_hints(b"") == rpb.FSMHints()


@pytest.mark.parametrize(("data", "match"), [
    (b"{not json", "not valid JSON"),
    (b'{"log":5}', "log.*not a string"),
    (b'{"live_nodes":{}}', "live_nodes.*not a list"),
    (b'{"live_nodes":[{"fnode":1.5}]}', "fnode.*int64"),
    (b'{"live_nodes":[{"segments":[{"author":-1}]}]}', "author.*uint32"),
    (b'{"live_nodes":[{"segments":[{"first_checksum":4294967296}]}]}', "uint32"),
    (b'{"properties":[{"path":true}]}', "path.*not a string"),
    (b"\xff\xff\xff", "neither JSON nor protobuf"),
])
def test_undecodable_hints(data: bytes, match: str) -> None:
    with pytest.raises(HintsError, match=match):
        decode_hints(data)


def hint(fnode: int, *segs: tuple[int, int, str]) -> rpb.FnodeSegments:
    node = rpb.FnodeSegments(fnode=fnode)
    for first, last, log in segs:
        node.segments.add(author=1, first_seq_no=first, last_seq_no=last, log=log)
    return node


@pytest.mark.parametrize(("nodes", "match"), [
    ([hint(3, (3, 4, "")), hint(2, (2, 2, ""))], "not after Fnode 3"),
    ([hint(3, (3, 4, "")), hint(3, (3, 4, ""))], "not after Fnode 3"),
    ([hint(3, (4, 5, ""))], "must start at seq_no 3"),
    ([hint(3, (3, 4, "other/log"))], "last segment is in log 'other/log'"),
    ([hint(3, (3, 6, "")), hint(4, (4, 5, "other/log"))], "overlaps"),
])
def test_live_log_segments_errors(nodes: list[rpb.FnodeSegments], match: str) -> None:
    hints = rpb.FSMHints(log=LOG, live_nodes=nodes)
    with pytest.raises(HintsError, match=match):
        live_log_segments(hints)
    with pytest.raises(HintsError):
        FSM(hints)


@pytest.mark.parametrize(("hints", "path"), [
    (rpb.FSMHints(log="bad log"), "log"),
    (rpb.FSMHints(log=LOG, live_nodes=[hint(1, (1, 1, LOG))]), "live_nodes[0].segments[0].log"),
    (rpb.FSMHints(log=LOG, live_nodes=[rpb.FnodeSegments(fnode=1)]), "live_nodes[0].segments"),
    (rpb.FSMHints(log=LOG, properties=[rpb.Property(path="IDENTITY")]), "properties[0].path"),
    (rpb.FSMHints(live_nodes=[hint(1, (1, 1, "other/log"))]), "log"),
])
def test_invalid_hints(hints: rpb.FSMHints, path: str) -> None:
    with pytest.raises(HintsError) as err:
        validate_hints(hints)
    assert err.value.path == path
    with pytest.raises(HintsError):
        FSM(hints)
