"""`gazctl journals read --committed` against a real broker: messages as consumers see them.

Journals hold committed messages, transactions (one of them rolled back),
duplicates left by retried appends and ACKs; the read prints each committed
message once, in the order a consumer gets them, as it was written. Offsets
written by --offsets-out let a later read carry on without losing or
repeating a message.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from tests.gazctl.committed_support import (
    ACK,
    CONT,
    OUT,
    P,
    Q,
    R,
    csv_record,
    json_record,
    proto_record,
)
from tests.gazctl.support import ok, one_error_line, run_main, wait_primaries
from tests.gazctl.test_journals_append_read import _append
from tests.gazctl.test_journals_read_watch import _reading, _stop

JSON_JOURNALS = ["all", "blocking", "count", "open", "resume", "tail"]
SPECS = """\
name: rc/
replication: 1
fragment:
  length: 16777216
  compression_codec: NONE
  stores: [file:///]
  refresh_interval: 1s
children:
  - name: rc/csv
    revision: 0
    labels:
      - {name: content-type, value: text/csv}
  - name: rc/json/
    labels:
      - {name: content-type, value: application/x-ndjson}
    children:
%s
  - name: rc/plain
    revision: 0
    labels:
      - {name: content-type, value: text/plain}
  - name: rc/proto
    revision: 0
    labels:
      - {name: content-type, value: application/x-protobuf-fixed}
  - name: rc/raw
    revision: 0
"""
PROTO_CLASS = "tests.gazctl.committed_support:ProtoEvent"


@pytest.fixture(scope="module", autouse=True)
def rc_journals(address: str) -> None:
    children = "".join(f"      - name: rc/json/{n}\n        revision: 0\n" for n in JSON_JOURNALS)
    ok("journals", "apply", "--broker.address", address, input=SPECS % children.rstrip("\n"))
    wait_primaries(address, "prefix=rc/")


def _write(address: str, journal: str, *records: bytes) -> None:
    """Each record its own append, as a publisher's appends are."""
    for record in records:
        _append(address, journal, record)


def _committed(address: str, journal: str, *args: str) -> bytes:
    return ok("journals", "read", "--committed", "-l", f"name={journal}",
              "--broker.address", address, *args).stdout_bytes


def test_each_committed_message_once_in_consumer_order(address: str) -> None:
    q1, q2 = json_record(Q, 1, OUT, "q1"), json_record(Q, 2, OUT, "q2")
    p1, p2 = json_record(P, 1, CONT, "p1"), json_record(P, 2, CONT, "p2")
    r0, r1 = json_record(R, 1, CONT, "r0"), json_record(R, 5, CONT, "r1 rolled back")
    _write(address, "rc/json/all",
           q1, p1, p2, p2,  # p2 twice: a retried append
           r0, json_record(R, 2, ACK), q2, r1,
           json_record(P, 3, ACK),  # commits p1 and p2
           json_record(R, 2, ACK),  # R's recovery acknowledges r0 again: r1 is rolled back
           q2)  # a retried append of q2

    assert _committed(address, "rc/json/all") == q1 + r0 + q2 + p1 + p2


def test_a_later_read_resumes_from_offsets_out_without_losing_or_repeating(
        address: str, tmp_path: Path) -> None:
    offsets = tmp_path / "offsets.json"
    offsets.write_text("{}")
    journal = "rc/json/resume"
    args = ["--offsets", str(offsets), "--offsets-out", str(offsets)]
    q1, p1, p2 = (json_record(Q, 1, OUT, "q1"), json_record(P, 1, CONT, "p1"),
                  json_record(P, 2, CONT, "p2"))
    _write(address, journal, q1, p1, p2)
    first = _committed(address, journal, *args)
    kept = json.loads(offsets.read_text())[journal]

    r1, q2 = json_record(R, 1, CONT, "r1"), json_record(Q, 2, OUT, "q2")
    _write(address, journal, p2, r1, json_record(P, 3, ACK), json_record(R, 2, ACK), q2, q2)
    second = _committed(address, journal, *args)
    third = _committed(address, journal, *args)

    assert (first, kept) == (q1, len(q1))  # p1's transaction is still open
    assert (second, third) == (p1 + p2 + r1 + q2, b"")


def test_count_stops_inside_a_transaction_and_the_next_read_goes_on(
        address: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    journal = "rc/json/count"
    offsets = tmp_path / "offsets.json"
    p1, p2, p3 = (json_record(P, n, CONT, f"p{n}") for n in (1, 2, 3))
    q1 = json_record(Q, 1, OUT, "q1")
    _write(address, journal, p1, p2, p2, p3, json_record(P, 4, ACK), q1)

    first = run_main(capsys, "journals", "read", "--committed", "-l", f"name={journal}", "-c",
                     "2", "--offsets-out", str(offsets), "--broker.address", address)
    second = _committed(address, journal, "--offsets", str(offsets))

    assert first == (0, (p1 + p2).decode(), "")
    assert second == p3 + q1


def test_an_open_transaction_at_the_end_is_kept_and_said(
        address: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    journal = "rc/json/open"
    offsets = tmp_path / "offsets.json"
    p1, q1 = json_record(P, 1, CONT, "p1"), json_record(Q, 1, OUT, "q1")
    _write(address, journal, p1, q1)

    code, out, err = run_main(capsys, "journals", "read", "--committed", "-l", f"name={journal}",
                              "--offsets-out", str(offsets), "--broker.address", address)

    assert (code, out) == (0, q1.decode())
    assert err == (f"note: {journal}: a transaction begun at offset 0 was still open where the "
                   "read stopped; the offset kept for --offsets-out is that one, so messages "
                   "printed after it will be printed again by a read resuming there\n")
    assert json.loads(offsets.read_text()) == {journal: 0}


def test_tail_keeps_the_write_head_it_started_at(address: str, tmp_path: Path) -> None:
    journal = "rc/json/tail"
    offsets = tmp_path / "offsets.json"
    before = json_record(Q, 1, OUT, "before")
    _write(address, journal, before)

    out = _committed(address, journal, "--tail", "--offsets-out", str(offsets))

    assert (out, json.loads(offsets.read_text())) == (b"", {journal: len(before)})


def test_block_prints_a_transaction_once_it_commits(address: str, tmp_path: Path,
                                                    state_home: Path) -> None:
    journal = "rc/json/blocking"
    offsets = tmp_path / "offsets.json"
    p1, q1 = json_record(P, 1, CONT, "p1"), json_record(Q, 1, OUT, "q1")
    ack = json_record(P, 2, ACK)
    with _reading(address, tmp_path, state_home, "--committed", "-l", f"name={journal}",
                  "--offsets-out", str(offsets)) as (proc, out, err):
        _write(address, journal, p1, q1)
        _wait_for(out, q1)  # q1, which follows p1, and not p1: it is pending
        _write(address, journal, ack)
        _wait_for(out, q1 + p1)
        _stop(proc, signal.SIGTERM)
    assert json.loads(offsets.read_text()) == {journal: len(p1 + q1 + ack)}
    assert err.read_bytes() == b""


def _wait_for(path: Path, content: bytes, limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while (got := path.read_bytes()) != content:
        assert time.monotonic() < deadline, (got, content)
        assert len(got) <= len(content) and content.startswith(got), (got, content)
        time.sleep(0.05)


def test_csv_rows_are_read_committed(address: str) -> None:
    q1, p1 = csv_record(Q, 1, OUT, "q1", "a,b"), csv_record(P, 1, CONT, "p1", "line\nbreak")
    rolled = csv_record(P, 5, CONT, "rolled back")
    _write(address, "rc/csv", p1, q1, p1, csv_record(P, 2, ACK, "", ""), rolled,
           csv_record(P, 2, ACK, "", ""))

    assert _committed(address, "rc/csv", "-c", "2") == q1 + p1


def test_protobuf_messages_are_read_committed_with_their_class(address: str) -> None:
    p1, q1 = proto_record(P, 1, CONT, "p1"), proto_record(Q, 1, OUT, "q1")
    _write(address, "rc/proto", p1, q1, proto_record(P, 2, ACK), q1)

    assert _committed(address, "rc/proto", "--message-type", PROTO_CLASS) == q1 + p1


@pytest.mark.parametrize(("journal", "extra", "message"), [
    ("rc/plain", [], "invalid input: --committed: journal 'rc/plain': no message framing for "
                     "content-type 'text/plain' (supported: application/x-ndjson, "
                     "application/x-protobuf-fixed, text/csv); read it without --committed"),
    ("rc/raw", [], "invalid input: --committed: journal 'rc/raw' has no 'content-type' label to "
                   "choose a message framing; read it without --committed"),
    ("rc/proto", [], "invalid input: --committed: journal 'rc/proto' holds protobuf messages: "
                     "name their class with --message-type package.module:Class"),
    ("rc/proto", ["--message-type", "tests.gazctl.committed_support:Event"],
     "invalid input: --message-type: tests.gazctl.committed_support:Event is not a generated "
     "protobuf message class"),
])
def test_a_journal_without_a_usable_framing_is_one_error(
        journal: str, extra: list[str], message: str, address: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(capsys, "journals", "read", "--committed", "-l",
                              f"name in (rc/json/all, {journal})", *extra,
                              "--broker.address", address)

    assert (code, out) == (1 if not extra else 2, "")
    assert one_error_line(err) == f"error: {message}"


def test_message_type_needs_committed(address: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(capsys, "journals", "read", "-l", "name=rc/proto",
                              "--message-type", PROTO_CLASS, "--broker.address", address)

    assert (code, out) == (2, "")
    assert one_error_line(err) == ("error: invalid input: --message-type: names the messages "
                                   "of --committed reads; add --committed")
