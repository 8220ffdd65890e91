"""`gazctl shards prune` and `gazctl shards recover` against the stream-sum example on real
consumers (the in-process harness), with Spark in local mode: pruning never removes what a
later recovery or a fail-over needs."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from examples.specs import example_journals, example_shards
from examples.stream_sum import chunker
from examples.stream_sum.messages import Sum
from examples.stream_sum.names import RECOVERY_LOG_PREFIX, SUMS_JOURNAL, partition
from examples.stream_sum.summer import Summer
from gazette_core.broker.client.channel import journal_stub
from gazette_core.broker.client.journals import list_fragments
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.durations_ext import from_seconds
from gazette_core.consumer.api.client import get_hints
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol.shard_spec_ext import primary_hint_key, recovery_log
from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.consumer.recoverylog.hints import encode_hints, live_log_segments
from gazette_core.keyspace.etcd_util import connect
from gazette_core.testing.consumer import ConsumerHarness, consumer_harness
from gazette_core.testing.consumer_inprocess import InProcessConsumer
from spark_jobs import shards_prune
from spark_jobs.session import stop_session
from tests.gazctl.support import gazctl as gazctl_process
from tests.gazctl.support import isolated_env, ok, one_error_line

SUITE = "prune-e2e"
A, B = "chunks-part-000", "chunks-part-001"
LOG_A, LOG_B = f"{RECOVERY_LOG_PREFIX}/{A}", f"{RECOVERY_LOG_PREFIX}/{B}"
HINT_INTERVAL_S = 0.5
WAIT_S = 30.0


@pytest.fixture(scope="module", autouse=True)
def one_spark_session() -> Iterator[None]:
    yield
    stop_session()


async def add_consumer(h: ConsumerHarness) -> InProcessConsumer:
    """A consumer writing primary hints every HINT_INTERVAL_S (not every 5 minutes)."""
    n = len(h.consumers) + 1
    consumer = InProcessConsumer(h.app_factory(), h.directory / f"consumer-{n}",
                                 etcd_endpoint=h.etcd_endpoint,
                                 broker_endpoint=h.broker_endpoint, lease_s=h.lease_s,
                                 suffix=f"consumer-{n}")
    consumer.config.hint_interval = HINT_INTERVAL_S
    await consumer.start()
    h.consumers.append(consumer)
    return consumer


async def install(h: ConsumerHarness) -> None:
    """Two stream-sum partitions with JSON stores, their logs rolling every 2 KiB."""
    keep = {partition(0), partition(1), SUMS_JOURNAL, LOG_A, LOG_B}
    specs = [s for s in example_journals("stream_sum") if s.name in keep]
    for spec in specs:
        spec.fragment.refresh_interval.CopyFrom(from_seconds(1))
        if spec.name.startswith(RECOVERY_LOG_PREFIX):
            spec.fragment.length = 2048
            spec.fragment.compression_codec = pb.NONE
    await h.apply_journals(specs)
    shards = [s for s in example_shards("stream_sum") if s.id in (A, B)]
    for spec in shards:
        # Short transactions, each rewriting the store's state.json into the log.
        spec.max_txn_duration.CopyFrom(from_seconds(0.02))
        spec.hot_standbys = 0
        spec.hint_backups = 1
        del spec.labels.labels[:]
        spec.labels.labels.add(name="store", value="json")
        spec.labels.labels.add(name="suite", value=SUITE)
    await h.create_shards(*shards, create_logs=False)


async def feed(h: ConsumerHarness, streams: int, seed: int) -> None:
    got = await chunker.run(h.journals, chunker.Options(streams=streams, max_chunks=6,
                                                        rate=200, timeout=20, settle=0.2,
                                                        seed=seed))
    assert got["verified"] == streams, got


async def fail_over(h: ConsumerHarness) -> None:
    """Crash the only consumer; a new one recovers both shards from their logs."""
    await h.consumers[-1].crash()
    await add_consumer(h)
    for shard in (A, B):
        await h.wait_primary(shard)


async def prunable_history(h: ConsumerHarness, seed: int, least: int = 3) -> int:
    """Feed, fail over (a's primary hints become its backup.0) and feed again, until a's log
    holds at least `least` persisted fragments that none of a's hints need; the number of
    streams fed. How much log one round writes depends on the machine: on a slow one the
    transactions are fewer and larger, so there are fewer state rewrites to log."""
    fed = 0
    for round_ in range(6):
        await feed(h, 24, seed=seed * 100 + 2 * round_)
        await fail_over(h)
        await feed(h, 24, seed=seed * 100 + 2 * round_ + 1)
        fed += 48
        hints = await hints_ready(h)
        if len([f for f in await persisted(h, LOG_A) if not needed(hints[A], f)]) >= least:
            return fed
    raise AssertionError(f"six rounds left fewer than {least} fragments that no hints need")


async def add_backup_slot(h: ConsumerHarness, shard: str) -> None:
    listed = await h.listed(shard)
    spec = cpb.ShardSpec()
    spec.CopyFrom(listed.spec)
    spec.hint_backups += 1
    resp = await h.shards().Apply(cpb.ApplyRequest(changes=[cpb.ApplyRequest.Change(
        upsert=spec, expect_mod_revision=listed.mod_revision)]))
    assert resp.status == cpb.OK, resp


async def hints_ready(h: ConsumerHarness) -> dict[str, cpb.GetHintsResponse]:
    """Hints of both shards once a's primary and backup hints have live files."""
    deadline = time.monotonic() + WAIT_S
    while True:
        got = {s: await get_hints(h.live[0].endpoint, s) for s in (A, B)}
        a = got[A]
        if a.primary_hints.hints.live_nodes and a.backup_hints[0].hints.live_nodes:
            return got
        assert time.monotonic() < deadline, got
        await asyncio.sleep(0.1)


async def fragments(h: ConsumerHarness, log: str) -> list[pb.Fragment]:
    listed = await list_fragments(journal_stub(h.broker_endpoint),
                                  pb.FragmentsRequest(journal=log))
    return [f.spec for f in listed]


async def persisted(h: ConsumerHarness, log: str) -> list[pb.Fragment]:
    """The log's fragments once every one but the open one at the head is persisted."""
    deadline = time.monotonic() + WAIT_S
    while True:
        frags = await fragments(h, log)
        if all(f.mod_time for f in frags[:-1]):
            return frags
        assert time.monotonic() < deadline, frags
        await asyncio.sleep(0.1)


def needed(resp: cpb.GetHintsResponse, frag: pb.Fragment) -> bool:
    """Whether any hint set of `resp` reads `frag`: from its first hinted offset on, up to
    each bounded segment's end, the last segment reaching to the write head."""
    for entry in [resp.primary_hints, *resp.backup_hints]:
        _, segments = live_log_segments(entry.hints)
        spans = [(s.first_offset, s.last_offset) for s in segments]
        spans[-1] = (spans[-1][0], 0)
        for first, last in spans:
            if frag.end > first and (last == 0 or frag.begin < last):
                return True
    return False


def on_disk(h: ConsumerHarness, log: str) -> list[tuple[int, int]]:
    return sorted((int(p.name[:16], 16), int(p.name[17:33], 16))
                  for p in (h.directory / "fragments" / log).iterdir())


def tree(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file()}


async def gazctl(h: ConsumerHarness, *args: str) -> str:
    """gazctl in a thread (it runs its own event loop) against the harness; its stdout."""
    addresses = ("--consumer.address", h.live[0].endpoint, "--broker.address",
                 h.broker_endpoint)
    result = await asyncio.to_thread(ok, "shards", *args, *addresses)
    return result.stdout


async def test_prune_keeps_what_every_hint_set_needs_and_recovery_still_works(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async with consumer_harness(Summer, consumers=0) as h:
        await add_consumer(h)
        await install(h)
        fed = await prunable_history(h, seed=1)  # its fail-overs write backup.0 hints
        await add_backup_slot(h, B)  # as an operator raising hint_backups would
        hints = await hints_ready(h)
        assert [e.HasField("hints") for e in hints[B].backup_hints] == [True, False]
        frags = {log: await persisted(h, log) for log in (LOG_A, LOG_B)}
        files_before = {log: on_disk(h, log) for log in (LOG_A, LOG_B)}
        doomed = [f for f in frags[LOG_A] if not needed(hints[A], f)]
        assert len(doomed) >= 3, "the test needs fragments no hints need"
        before = json.loads(await gazctl(h, "recover", "--id", A, "-d", str(tmp_path / "1"),
                                         "-o", "json"))

        # The spark-submit entry point, dry: the same audit lines, would-be deletions.
        capsys.readouterr()
        code = await asyncio.to_thread(shards_prune.main, [
            "--consumer.address", h.live[0].endpoint, "--broker.address", h.broker_endpoint,
            "-l", f"suite={SUITE}", "--dry-run", "--file-root", str(h.directory / "fragments")])
        dry = capsys.readouterr().out.splitlines()
        assert code == 0
        assert [(a["begin"], a["outcome"]) for a in map(json.loads, dry[:-1])] == [
            (f.begin, "would_prune") for f in doomed]
        assert json.loads(dry[-1])["dry_run"] is True
        # The consumer keeps recording (hints barriers), so newer fragments may appear.
        assert set(files_before[LOG_A]) <= set(on_disk(h, LOG_A))

        out = (await gazctl(h, "prune", "-l", f"suite={SUITE}", "-o", "json", "--file-root",
                            str(h.directory / "fragments"))).splitlines()

        summary = json.loads(out[-1])
        audits = [json.loads(line) for line in out[:-1]]
        assert [(a["log"], a["begin"], a["end"], a["outcome"]) for a in audits] == [
            (LOG_A, f.begin, f.end, "pruned") for f in doomed]
        # Fragments persisted since `frags` was listed are at the log's end: kept.
        newer = summary["fragments"] - len(frags[LOG_A])
        newer_bytes = summary["bytes_total"] - sum(f.end - f.begin for f in frags[LOG_A])
        assert newer >= 0 and newer_bytes >= 0
        assert summary == {
            "shards": 2, "logs": 1, "logs_skipped": 1, "logs_aborted": 0,
            "fragments": len(frags[LOG_A]) + newer, "fragments_pruned": len(doomed),
            "fragments_kept": len(frags[LOG_A]) - len(doomed) + newer, "already_gone": 0,
            "permission_denied": 0, "failed": 0,
            "bytes_total": sum(f.end - f.begin for f in frags[LOG_A]) + newer_bytes,
            "bytes_pruned": sum(f.end - f.begin for f in doomed),
            "bytes_kept": sum(f.end - f.begin for f in frags[LOG_A] if f not in doomed)
            + newer_bytes,
            "bytes_already_gone": 0, "dry_run": False,
            "skipped": [{"log": LOG_B, "reason": f"shard {B}: no backup.1 hints"}],
            "aborted": [], "errors": []}
        pruned = {(f.begin, f.end) for f in doomed}
        left = set(on_disk(h, LOG_A))
        assert not left & pruned
        assert set(files_before[LOG_A]) - pruned <= left
        assert set(files_before[LOG_B]) <= set(on_disk(h, LOG_B))  # b lacks a backup: all kept

        # A fresh recovery from the pruned log rebuilds the same store.
        after = json.loads(await gazctl(h, "recover", "--id", A, "-d", str(tmp_path / "2"),
                                        "-o", "json"))
        assert after["files"] == before["files"] and after["hints"] == "primary"
        assert tree(tmp_path / "2") == tree(tmp_path / "1")
        assert "state.json" in tree(tmp_path / "1")
        # So does a fail-over: the shard goes on exactly once (a lost checkpoint would
        # consume its source again from the start and publish every sum twice).
        await fail_over(h)
        await feed(h, 12, seed=3)
        sums = await h.committed_messages(SUMS_JOURNAL, lambda _: Sum())
        assert len(sums) == fed + 12
        assert len({(s.id, s.seq_no) for s in sums if isinstance(s, Sum)}) == len(sums)
        # The table lists each restored file with its size.
        listing = await gazctl(h, "recover", "--id", A, "-d", str(tmp_path / "3"))
        rows = [line.split() for line in listing.splitlines()[1:]]
        assert rows == [[path, str(len(data))] for path, data in tree(tmp_path / "3").items()]


async def fork_of(h: ConsumerHarness, parent: pb.Fragment) -> cpb.ShardSpec:
    """A (disabled) shard C whose history forked from a's log: its hints name a segment
    of a's log covering `parent`, then its own log."""
    spec = ConsumerHarness.shard_spec("forked", [partition(0)],
                                      recovery_log_prefix=RECOVERY_LOG_PREFIX, hint_backups=0,
                                      labels=[("suite", SUITE)])
    spec.disable = True
    await h.create_shards(spec)
    hints = rpb.FSMHints(log=recovery_log(spec), live_nodes=[rpb.FnodeSegments(
        fnode=1, segments=[
            rpb.Segment(author=11, first_seq_no=1, last_seq_no=4, log=LOG_A,
                        first_offset=parent.begin, last_offset=parent.end),
            rpb.Segment(author=12, first_seq_no=5, last_seq_no=6, first_offset=0,
                        last_offset=40)])])
    etcd = await connect(h.etcd_endpoint)
    try:
        await etcd.put(primary_hint_key(spec).encode(), encode_hints(hints))
    finally:
        await etcd.close()
    return spec


async def test_a_forked_shards_segments_keep_the_parent_logs_fragments() -> None:
    async with consumer_harness(Summer, consumers=0) as h:
        await add_consumer(h)
        await install(h)
        await prunable_history(h, seed=6)
        await add_backup_slot(h, B)
        hints = await hints_ready(h)
        frags = await persisted(h, LOG_A)
        doomed = [f for f in frags if not needed(hints[A], f)]
        assert len(doomed) >= 3
        forked = await fork_of(h, doomed[1])

        out = (await gazctl(h, "prune", "-l", f"suite={SUITE}", "-o", "json", "--file-root",
                            str(h.directory / "fragments"))).splitlines()

        audits = [json.loads(line) for line in out[:-1]]
        assert [(a["log"], a["begin"]) for a in audits] == [
            (LOG_A, f.begin) for f in doomed if f != doomed[1]]
        summary = json.loads(out[-1])
        assert (summary["shards"], summary["logs"]) == (3, 2)  # a's log and the fork's own
        assert (doomed[1].begin, doomed[1].end) in on_disk(h, LOG_A)
        assert forked.disable


async def test_recover_errors_are_one_line_and_leave_no_directory(tmp_path: Path,
                                                                  state_home: Path) -> None:
    env = isolated_env(state_home)
    async with consumer_harness(Summer, consumers=0) as h:
        await add_consumer(h)
        await install(h)
        await h.wait_primary(B)
        await add_backup_slot(h, B)  # backup.1 is empty until a second recovery
        addresses = ("--consumer.address", h.live[0].endpoint, "--broker.address",
                     h.broker_endpoint)

        def run(*args: str) -> tuple[int, str]:
            proc = gazctl_process("shards", "recover", *args, *addresses, env=env)
            return proc.returncode, one_error_line(proc.stderr.decode()).removeprefix("error: ")

        (tmp_path / "full").mkdir()
        (tmp_path / "full" / "x").write_text("x")
        assert (await asyncio.to_thread(run, "--id", "nope", "-d", str(tmp_path / "n"))) == (
            3, "no shard exists with id 'nope'")
        code, message = await asyncio.to_thread(run, "--id", B, "-d", str(tmp_path / "full"))
        assert code == 2 and "is not empty" in message
        code, message = await asyncio.to_thread(run, "--id", B, "-d", str(tmp_path / "m"),
                                                "--hints", "backup.1")
        assert (code, message) == (1, f"shard {B} has no backup.1 hints")
        code, message = await asyncio.to_thread(run, "--id", B, "-d", str(tmp_path / "m"),
                                                "--hints", "backup.7")
        assert code == 2 and "backup.0 to backup.1" in message
        code, message = await asyncio.to_thread(run, "--id", B, "-d", str(tmp_path / "m"),
                                                "--hints", "secondary")
        assert code == 2 and "expected primary or backup.N" in message
        # No broker to read the log from: one line, and no directory left behind.
        proc = await asyncio.to_thread(
            gazctl_process, "shards", "recover", "--id", B, "-d", str(tmp_path / "u"),
            "--consumer.address", h.live[0].endpoint, "--broker.address", "http://127.0.0.1:9",
            "--timeout", "2s", env=env)
        line = one_error_line(proc.stderr.decode())
        assert proc.returncode == 1
        assert line.startswith(f"error: learning the write head of recovery log '{LOG_B}': ")
        assert "127.0.0.1:9" in line
        assert not (tmp_path / "n").exists() and not (tmp_path / "m").exists()
        assert not (tmp_path / "u").exists()
        assert (tmp_path / "full" / "x").read_text() == "x"

        # Off a terminal: no progress bar, just the summary line (b has written nothing).
        proc = await asyncio.to_thread(gazctl_process, "shards", "recover", "--id", B, "-d",
                                       str(tmp_path / "b"), "--hints", "backup.0", *addresses,
                                       env=env)
        assert proc.returncode == 0
        assert proc.stderr.decode() == (f"recovered shard {B} from {LOG_B} (hints: backup.0) "
                                        f"into {tmp_path / 'b'}: 0 files, 0 B\n")
