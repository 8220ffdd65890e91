"""The journals-frame job's parts without Spark or brokers: which fragments are read, how
journals map to row kinds, executors' rows from files in a store, and failure lines."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from gazette_core.broker.codecs import compress
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.stores.registry import get_store
from gazette_core.errors import ValidationError
from gazette_core.message.reader import MessageDecodeError
from gazette_core.message.uuid import Flags, build_uuid
from spark_jobs.decode.content import CSV, JSON, RAW, JournalTask
from spark_jobs.frame_export import spark_failure
from spark_jobs.selection import FileRootUnknown, Selection
from spark_jobs.source.frame_plan import covering, journal_kind, plan_frame, shared_kind
from spark_jobs.source.range_read import journal_rows as task_rows

PRODUCER = bytes.fromhex("030303030303")


def spec(name: str, content_type: str | None = None) -> pb.JournalSpec:
    s = pb.JournalSpec(name=name)
    if content_type is not None:
        s.labels.labels.add(name="content-type", value=content_type)
    return s


def frag(begin: int, end: int, mod_time: int = 100, journal: str = "j/one",
         store: str = "file:///", codec: int = pb.NONE) -> pb.Fragment:
    return pb.Fragment(journal=journal, begin=begin, end=end, mod_time=mod_time,
                       backing_store=store if mod_time else "", compression_codec=codec,
                       sum=pb.SHA1Sum())


def spans(fragments: list[pb.Fragment]) -> list[tuple[int, int]]:
    return [(f.begin, f.end) for f in fragments]


def test_covering_drops_nested_fragments_and_keeps_overlaps_in_order() -> None:
    got = covering([frag(100, 300), frag(0, 100), frag(0, 50), frag(250, 400, mod_time=0),
                    frag(120, 200)], since=0, unpersisted=True)

    assert spans(got) == [(0, 100), (100, 300), (250, 400)]


def test_since_skips_old_persisted_fragments_and_persisted_only_the_spool() -> None:
    fragments = [frag(0, 100, mod_time=10), frag(100, 200, mod_time=50), frag(200, 300, 0)]

    assert spans(covering(fragments, since=20, unpersisted=True)) == [(100, 200), (200, 300)]
    assert spans(covering(fragments, since=0, unpersisted=False)) == [(0, 100), (100, 200)]


def test_kinds_follow_the_content_type_label() -> None:
    assert journal_kind(spec("a", "application/x-ndjson")) == JSON
    assert journal_kind(spec("a", "Application/X-NDJSON; charset=utf-8")) == JSON
    assert journal_kind(spec("a", "text/csv")) == CSV
    assert journal_kind(spec("a")) == RAW
    assert journal_kind(spec("a", "application/octet-stream")) == RAW
    with pytest.raises(ValidationError, match="a holds protobuf messages"):
        journal_kind(spec("a", "application/x-protobuf-fixed"))


def test_a_selection_mixing_framings_is_refused_naming_one_journal_of_each() -> None:
    with pytest.raises(ValidationError) as err:
        shared_kind([spec("b", "text/csv"), spec("a", "text/csv"), spec("c")])

    assert err.value.reason == ("the journals do not share one framing: a is csv, c is raw; "
                                "select journals of one content-type")


def test_plan_has_one_task_per_journal_and_the_broker_only_for_unpersisted_content(
        tmp_path: Path) -> None:
    selection = Selection(journals=[
        (spec("j/two", "text/csv"), [frag(0, 10, journal="j/two"),
                                     frag(10, 20, mod_time=0, journal="j/two")]),
        (spec("j/one", "text/csv"), [frag(0, 10)]),
        (spec("j/empty", "text/csv"), []),
    ], suspended=["j/paused"])

    root = str(tmp_path)
    plan = plan_frame(selection, broker="http://b:1", file_root=root)

    assert [(t.journal, t.kind, t.broker, t.file_root) for t in plan.tasks] == [
        ("j/one", CSV, "", root), ("j/two", CSV, "http://b:1", root)]
    assert spans(plan.tasks[1].parsed()) == [(0, 10), (10, 20)]
    assert (plan.bytes_total, plan.suspended) == (30, ["j/paused"])
    with pytest.raises(FileRootUnknown):
        plan_frame(selection, broker="http://b:1")
    persisted = plan_frame(selection, broker="b", unpersisted=False, file_root=root)
    assert (persisted.unpersisted_skipped, persisted.bytes_total) == (1, 20)


def _store(root: Path, fragment: pb.Fragment, data: bytes) -> pb.Fragment:
    asyncio.run(get_store("file:///", str(root)).put(
        fragment, compress(fragment.compression_codec, data)))
    return fragment


def _json(n: int, flags: Flags = Flags.OUTSIDE_TXN, clock: int = 0) -> bytes:
    u = build_uuid(PRODUCER, (clock or n + 10) << 4, flags)
    return json.dumps({"uuid": str(u), "n": n}).encode() + b"\n"


def test_rows_jump_gaps_and_drop_the_partial_record_before_one(tmp_path: Path) -> None:
    first = _json(1) + _json(2)
    cut = _json(3)[:10]  # a record whose rest was in a pruned fragment
    second = _json(4) + _json(5)
    f1 = _store(tmp_path, frag(0, len(first) + len(cut), codec=pb.GZIP), first + cut)
    gap = f1.end + 40
    f2 = _store(tmp_path, frag(gap, gap + len(second), codec=pb.ZSTANDARD), second)
    task = JournalTask("j/one", JSON, (f1.SerializeToString(), f2.SerializeToString()),
                       file_root=str(tmp_path))
    raw = JournalTask("j/one", RAW, task.fragments, file_root=str(tmp_path))

    rows = list(task_rows(task))

    assert [(offset, json.loads(value)["n"]) for _, offset, _, _, value in rows] == [
        (0, 1), (len(_json(1)), 2), (gap, 4), (gap + len(_json(4)), 5)]
    assert [(offset, data) for _, offset, data in task_rows(raw)] == [
        (0, first + cut), (gap, second)]


def test_uncommitted_messages_are_dropped_and_a_cut_record_at_the_end_is_an_error(
        tmp_path: Path) -> None:
    data = (_json(1) + _json(2, Flags.CONTINUE_TXN) + _json(3, Flags.CONTINUE_TXN)
            + _json(0, Flags.ACK_TXN, clock=13) + _json(4, Flags.CONTINUE_TXN))
    good = _store(tmp_path, frag(0, len(data), journal="j/a"), data)
    bad = _store(tmp_path, frag(0, len(data) - 3, journal="j/b"), data[:-3])

    got = list(task_rows(JournalTask("j/a", JSON, (good.SerializeToString(),),
                                     file_root=str(tmp_path))))

    assert [json.loads(row[4])["n"] for row in got] == [1, 2, 3]
    assert {row[3] for row in got} == {PRODUCER.hex()}
    last = len(data) - len(_json(4, Flags.CONTINUE_TXN))
    with pytest.raises(MessageDecodeError, match=f"j/b offset {last}: content ends inside"):
        list(task_rows(JournalTask("j/b", JSON, (bad.SerializeToString(),),
                                   file_root=str(tmp_path))))


def test_a_spark_failure_is_the_executors_exception_line() -> None:
    text = ("An error occurred while calling o81.save.\n"
            ": org.apache.spark.SparkException: Job aborted due to stage failure: ...\n"
            "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
            '  File "/x/frame_rows.py", line 80, in envelopes\n'
            "    raise MessageDecodeError(\n"
            "gazette_core.message.reader.MessageDecodeError: j offset 3: cannot decode\n"
            "\tat org.apache.spark.api.python.BasePythonRunner.handle(PythonRunner.scala:1)\n")

    assert str(spark_failure(RuntimeError(text))) == (
        "export failed: gazette_core.message.reader.MessageDecodeError: j offset 3: "
        "cannot decode")
    assert str(spark_failure(RuntimeError("\nboom\nmore"))) == "export failed: boom"
