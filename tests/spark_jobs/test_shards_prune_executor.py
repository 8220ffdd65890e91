"""The shards prune job below Spark: an executor's per-log prune and the driver's gathering,
against a real broker and its file store (the consumer side is a canned Shard stub)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from gazette_core.broker.client.journals import list_fragments
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.service import Broker
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol import consumer_pb2_grpc as cpb_grpc
from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.testing.broker import journal_spec
from gazette_core.testing.consumer import ConsumerHarness
from spark_jobs.shards_prune import Gathered, gather, prune_log
from tests.broker.conftest import broker, stub  # noqa: F401  (fixtures)
from tests.broker.support import append, create
from tests.spark_jobs.test_prune_plan import undeletable

RECOVERY_LOG = ("content-type", "application/x-gazette-recoverylog")
# Four 800-byte appends over 1 KiB fragments: persisted (0-800), (800-2400), and
# (2400-3200) still in the spool.
PERSISTED = [(0, 800), (800, 2400)]


async def rolled_log(stub: pb_grpc.JournalStub, name: str) -> None:  # noqa: F811
    """A recovery log with two persisted fragments and one spooled."""
    await create(stub, journal_spec(name, length=1024, labels=(RECOVERY_LOG,)))
    for n in range(4):
        await append(stub, name, bytes([ord("a") + n]) * 800)
    deadline = time.monotonic() + 20
    while True:
        frags = await list_fragments(stub, pb.FragmentsRequest(journal=name))
        if [(f.spec.begin, f.spec.end) for f in frags if f.spec.mod_time] == PERSISTED:
            return
        assert time.monotonic() < deadline, frags
        await asyncio.sleep(0.1)


def on_disk(root: Path, log: str) -> list[tuple[int, int]]:
    directory = root / log
    return sorted((int(p.name[:16], 16), int(p.name[17:33], 16)) for p in directory.iterdir())


def seg(first: int, last: int, log: str, author: int = 9) -> rpb.Segment:
    return rpb.Segment(author=author, first_seq_no=1, last_seq_no=5, first_offset=first,
                       last_offset=last, log=log)


def outcomes(records: list[dict[str, Any]]) -> list[tuple[int, int, str]]:
    return [(r["begin"], r["end"], r["outcome"]) for r in records if r["kind"] == "fragment"]


async def test_fragments_outside_the_segments_are_deleted_and_audited(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path) -> None:  # noqa: F811
    log = "prune-exec/logs/a"
    await rolled_log(stub, log)

    records = await prune_log(broker.endpoint, log, [seg(900, 0, log)], str(tmp_path),
                              False, False)

    assert records[0] == {"kind": "log", "log": log, "fragments": 3, "bytes_total": 3200,
                          "aborted": ""}
    assert outcomes(records) == [(0, 800, "pruned")]
    assert records[1]["fragment"].startswith(f"{log}/{0:016x}-{800:016x}-")
    assert records[1]["store"] == "file:///" and records[1]["mod_time"] > 0
    assert on_disk(tmp_path, log) == [(800, 2400)]


async def test_a_dry_run_reports_would_be_deletions_and_keeps_the_files(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path) -> None:  # noqa: F811
    log = "prune-exec/logs/dry"
    await rolled_log(stub, log)

    records = await prune_log(broker.endpoint, log, [seg(2400, 0, log)], str(tmp_path),
                              False, True)

    assert outcomes(records) == [(0, 800, "would_prune"), (800, 2400, "would_prune")]
    assert on_disk(tmp_path, log) == PERSISTED


async def test_permission_denied_deletes_are_reported_per_fragment(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path) -> None:  # noqa: F811
    log = "prune-exec/logs/locked"
    await rolled_log(stub, log)

    with undeletable(tmp_path / log):
        records = await prune_log(broker.endpoint, log, [seg(2400, 0, log)], str(tmp_path),
                                  False, False)

    assert outcomes(records) == [(0, 800, "permission_denied"),
                                 (800, 2400, "permission_denied")]
    code = 1 if os.geteuid() == 0 else 13
    assert all(f"[Errno {code}]" in r["message"] for r in records[1:])
    assert on_disk(tmp_path, log) == PERSISTED


async def test_an_unpersisted_fragment_outside_every_segment_aborts_the_log(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path) -> None:  # noqa: F811
    log = "prune-exec/logs/abort"
    await rolled_log(stub, log)

    # A bounded segment (as a forked shard's, in another log's hints) covers only 0-100.
    records = await prune_log(broker.endpoint, log, [seg(0, 100, log)], str(tmp_path),
                              False, False)

    assert "2400-3200" in records[0]["aborted"]
    assert outcomes(records) == []
    assert on_disk(tmp_path, log) == PERSISTED


async def test_a_segment_in_another_log_keeps_that_logs_fragments(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path) -> None:  # noqa: F811
    log = "prune-exec/logs/parent"
    await rolled_log(stub, log)
    # The parent's own hints reach from 2400; a forked child's reach 100-900 of the parent.
    segments = [seg(2400, 0, log), seg(100, 900, log, author=3), seg(0, 0, "prune-exec/x")]

    records = await prune_log(broker.endpoint, log, segments, str(tmp_path), False, False)

    assert outcomes(records) == []
    assert on_disk(tmp_path, log) == PERSISTED


async def test_a_log_that_cannot_be_listed_is_an_error_record(
        broker: Broker, tmp_path: Path) -> None:  # noqa: F811
    records = await prune_log(broker.endpoint, "prune-exec/logs/missing", [], str(tmp_path),
                              False, False)

    assert len(records) == 1 and "prune-exec/logs/missing" in records[0]["error"]


class CannedShards(cpb_grpc.ShardStub):
    """The Shard API of a consumer with fixed shards and hints (the driver's input)."""

    def __init__(self, shards: list[cpb.ShardSpec],
                 hints: dict[str, cpb.GetHintsResponse]) -> None:
        self.shards, self.hints = shards, hints

    async def List(self, req: cpb.ListRequest, timeout: float | None = None
                   ) -> cpb.ListResponse:
        return cpb.ListResponse(status=cpb.OK, shards=[
            cpb.ListResponse.Shard(spec=s, mod_revision=1, create_revision=1,
                                   route=pb.Route(primary=-1)) for s in self.shards])

    async def GetHints(self, req: cpb.GetHintsRequest, timeout: float | None = None
                       ) -> cpb.GetHintsResponse:
        return self.hints[req.shard]


def hints_of(log: str, first: int) -> rpb.FSMHints:
    return rpb.FSMHints(log=log, live_nodes=[rpb.FnodeSegments(fnode=1, segments=[
        rpb.Segment(author=4, first_seq_no=1, last_seq_no=3, first_offset=first,
                    last_offset=first + 10)])])


async def test_the_driver_skips_suspended_missing_sick_and_underhinted_logs(
        stub: pb_grpc.JournalStub, tmp_path: Path) -> None:  # noqa: F811
    prefix = "prune-gather/logs"
    live = journal_spec(f"{prefix}/live", labels=(RECOVERY_LOG,))
    paused = journal_spec(f"{prefix}/paused", labels=(RECOVERY_LOG,))
    paused.suspend.level = pb.JournalSpec.Suspend.FULL
    sick = journal_spec(f"{prefix}/sick", labels=(RECOVERY_LOG,), stores=("file:///sick/",))
    (tmp_path / "sick").mkdir()
    with undeletable(tmp_path / "sick"):  # nothing can be written there: unhealthy
        await stub.Apply(pb.ApplyRequest(changes=[pb.ApplyRequest.Change(upsert=s)
                                                  for s in (paused, sick)]))
        await create(stub, live)
        ids = ("live", "paused", "gone", "short", "sick")
        got = await gather_canned(stub, prefix, ids)

    assert got.shards == 5
    assert list(got.tasks) == [f"{prefix}/live"]
    assert [(s.first_offset, s.last_offset) for s in got.tasks[f"{prefix}/live"]] == [
        (100, 0), (50, 0)]
    sick_reason = got.skipped.pop(f"{prefix}/sick")
    assert sick_reason.startswith("store file:///sick/ is not healthy (FRAGMENT_STORE_UNHEALTHY)")
    assert got.skipped == {
        f"{prefix}/gone": "the journal does not exist",
        f"{prefix}/paused": "the journal is suspended (its fragments are left as they are)",
        f"{prefix}/short": "shard short: no backup.0 hints"}
    assert got.stores == {f"{prefix}/live": ["file:///"]}


async def gather_canned(stub: pb_grpc.JournalStub, prefix: str, ids: tuple[str, ...]  # noqa: F811
                        ) -> Gathered:
    """`gather` over shards `ids` of a canned consumer, each with full hints but "short"."""
    specs = [ConsumerHarness.shard_spec(i, ["prune-gather/source"], recovery_log_prefix=prefix,
                                        hint_backups=1) for i in ids]
    full = {i: cpb.GetHintsResponse(
        status=cpb.OK, primary_hints=cpb.GetHintsResponse.ResponseHints(
            hints=hints_of(f"{prefix}/{i}", 100)),
        backup_hints=[cpb.GetHintsResponse.ResponseHints(hints=hints_of(f"{prefix}/{i}", 50))])
        for i in ids}
    del full["short"].backup_hints[:]
    full["short"].backup_hints.add()
    return await gather(CannedShards(specs, full), stub, pb.LabelSelector(), "")
