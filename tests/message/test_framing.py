"""Framings: round trips, records split across feeds, CSV quoting and protobuf desync."""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass

import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.message.framing import framing_for, journal_framing
from gazette_core.message.framing_proto import MAGIC
from gazette_core.message.interfaces import ZERO_UUID, CSVRecord, JSONMessage, ProtoMessage
from gazette_core.message.uuid import Flags, build_uuid
from tests.message.support import A, Note

U = build_uuid(A, 1234 << 4, Flags.CONTINUE_TXN)


def feed_in_pieces(framing_type: str, stream: bytes, seed: int) -> list[tuple[int, bytes]]:
    """Feed `stream` in random pieces (down to single bytes); collect the spans."""
    rng = random.Random(seed)
    splitter = framing_for(framing_type).splitter()
    splitter.base = 1000
    spans, at = [], 0
    while at < len(stream):
        size = rng.randint(1, 9)
        spans += splitter.feed_spans(stream[at:at + size])
        at += size
    assert splitter.pending == 0
    return spans


def offsets_of(records: list[bytes], base: int = 1000) -> list[tuple[int, bytes]]:
    out, at = [], base
    for r in records:
        out.append((at, r))
        at += len(r)
    return out


@pytest.mark.parametrize("seed", range(3))
def test_json_lines_round_trip_fed_in_pieces(seed: int) -> None:
    framing = framing_for("application/x-ndjson")
    notes = [Note(text=t, n=i) for i, t in enumerate(["a", "b\nwith newline", "ü{}", ""])]
    notes[0].set_uuid(U)
    records = [framing.marshal(n) for n in notes]
    assert records[0] == (b'{"uuid":"%s","text":"a","n":0}\n' % str(U).encode())
    spans = feed_in_pieces("application/x-ndjson", b"".join(records), seed)
    assert spans == offsets_of(records)
    assert [framing.unmarshal(r, Note()) for _, r in spans] == notes
    assert framing.unmarshal(records[0], Note()).get_uuid() == U
    assert notes[1].get_uuid() == ZERO_UUID


def test_json_ack_is_an_empty_instance_and_unknown_keys_are_ignored() -> None:
    framing = framing_for("application/x-ndjson")
    ack = Note(text="x", n=3).new_acknowledgement("j")
    assert ack == Note()
    got = framing.unmarshal(b'{"uuid":"","text":"t","extra":1}\n', Note())
    assert got == Note(text="t")
    with pytest.raises(ValueError, match="not an object"):
        framing.unmarshal(b"[1]\n", Note())


@dataclass
class Reading(JSONMessage):
    value: float = 0.0


def test_json_records_are_utf8_json_and_nothing_else() -> None:
    framing = framing_for("application/x-ndjson")
    assert framing.unmarshal('{"text":"ü"}\n'.encode(), Note()) == Note(text="ü")
    # Python's json would guess UTF-16 and UTF-32 from bytes; Go reads only UTF-8.
    for encoding in ("utf-16-be", "utf-16-le", "utf-32"):
        with pytest.raises(ValueError):  # not UTF-8, or NUL bytes where JSON is expected
            framing.unmarshal('{"text":"a"}\n'.encode(encoding), Note())
    for constant in ("NaN", "Infinity", "-Infinity"):
        with pytest.raises(ValueError, match=f"{constant} is not a JSON value"):
            framing.unmarshal(b'{"value":%s}\n' % constant.encode(), Reading())
        with pytest.raises(ValueError, match="JSON"):
            framing.marshal(Reading(value=float(constant)))


@pytest.mark.parametrize("seed", range(3))
def test_csv_round_trip_with_quoted_newlines_fed_in_pieces(seed: int) -> None:
    framing = framing_for("text/csv")
    rows = [CSVRecord([str(U), "plain", 'quote " inside', "two\nlines", "a,b"]),
            CSVRecord([str(U), "", "\r\n", '""']),
            CSVRecord([str(ZERO_UUID), "x"])]
    records = [framing.marshal(r) for r in rows]
    assert records[0] == (str(U).encode() + b',plain,"quote "" inside","two\nlines","a,b"\n')
    spans = feed_in_pieces("text/csv", b"".join(records), seed)
    assert spans == offsets_of(records)
    assert [framing.unmarshal(r, CSVRecord()) for _, r in spans] == rows
    assert framing.unmarshal(records[0], CSVRecord()).get_uuid() == U


def test_csv_ack_is_a_row_of_the_same_width_empty_but_the_uuid() -> None:
    framing = framing_for("text/csv")
    ack = CSVRecord([str(U), "a", "b"]).new_acknowledgement("j")
    ack.set_uuid(U)
    assert framing.marshal(ack) == str(U).encode() + b",,\n"
    with pytest.raises(ValueError, match="column 0 is not a UUID"):
        framing.unmarshal(b"nope,a\n", CSVRecord())


@pytest.mark.parametrize("seed", range(3))
def test_protobuf_fixed_round_trip_fed_in_pieces(seed: int) -> None:
    framing = framing_for("application/x-protobuf-fixed")
    msgs = [ProtoMessage(pb.Label(name=str(U), value="v" * n), uuid_field="name")
            for n in (0, 1, 300)]
    records = [framing.marshal(m) for m in msgs]
    body = msgs[1].pb.SerializeToString()
    assert records[1] == MAGIC + len(body).to_bytes(4, "little") + body
    spans = feed_in_pieces("application/x-protobuf-fixed", b"".join(records), seed)
    assert spans == offsets_of(records)
    got = framing.unmarshal(spans[2][1], ProtoMessage(pb.Label(), "name"))
    assert got.pb == msgs[2].pb and got.get_uuid() == U


def test_proto_message_with_a_bytes_uuid_field() -> None:
    msg = ProtoMessage(pb.AppendRequest(), uuid_field="content")  # a bytes field
    assert msg.get_uuid() == ZERO_UUID
    msg.set_uuid(U)
    assert msg.pb.content == U.bytes and msg.get_uuid() == U
    assert msg.new_acknowledgement("j").pb == pb.AppendRequest()


def test_protobuf_fixed_resyncs_after_garbage_with_one_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    framing = framing_for("application/x-protobuf-fixed")
    good = [framing.marshal(ProtoMessage(pb.Label(name=f"m{i}"), "name")) for i in range(2)]
    garbage = b"\x00garbage bytes, not a frame" + MAGIC[:2]
    stream = good[0] + garbage + good[1]
    splitter = framing.splitter()
    splitter.label = "a/journal"
    with caplog.at_level(logging.WARNING):
        spans = []
        for i in range(0, len(stream), 5):
            spans += splitter.feed_spans(stream[i:i + 5])
    assert spans == [(0, good[0]), (len(good[0]) + len(garbage), good[1])]
    assert splitter.skipped == len(garbage)
    warnings = [r for r in caplog.records if "desync" in r.getMessage()]
    assert len(warnings) == 1
    assert f"a/journal at offset {len(good[0])}" in warnings[0].getMessage()


def test_framing_for_unknown_types_names_them() -> None:
    assert framing_for("application/x-ndjson; charset=utf-8").content_type == "application/x-ndjson"
    with pytest.raises(ValueError, match="'application/x-gazette-recoverylog'"):
        framing_for("application/x-gazette-recoverylog")
    spec = pb.JournalSpec(name="a/j")
    with pytest.raises(ValueError, match="'a/j' has no 'content-type' label"):
        journal_framing(spec)
    spec.labels.labels.add(name="content-type", value="text/csv")
    assert journal_framing(spec).content_type == "text/csv"


def test_partial_trailing_record_is_kept_for_the_next_feed() -> None:
    splitter = framing_for("application/x-ndjson").splitter()
    assert splitter.feed(b'{"a":1}\n{"b"') == [b'{"a":1}\n']
    assert splitter.pending == 4
    assert splitter.feed(b":2}\n") == [b'{"b":2}\n']
