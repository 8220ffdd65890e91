"""`spark.readStream.format("gazette")` against a real stack and real Spark (local mode):
micro-batches carry producer states so transactions split across batches come out once,
admission control, Trigger.AvailableNow, journals appearing mid-query, startingOffsets,
data loss, a query SIGKILLed mid-stream and restarted from its checkpoint whose output
equals `read_committed()` of the journals, and a streaming read on a standalone cluster.

One stack (file store, 1 KiB fragments) and one Spark session serve the module; the
cluster's test comes last (its session replaces the local one).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gazette_core.broker.client.journals import apply_journals
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.local.stack import Stack
from spark_jobs.datasource import register
from spark_jobs.session import get_session
from tests.gazctl.support import journals, with_broker
from tests.spark_jobs.cluster_support import Cluster, cluster  # noqa: F401 (a fixture)
from tests.spark_jobs.frames_support import fragments, spark_stack
from tests.spark_jobs.source.stream_support import (
    Row,
    append_to,
    apply,
    committed,
    message_round,
    output_rows,
    trailing_ack,
    wait_listed_without,
    wait_persisted_to,
)

JOB = Path(__file__).with_name("stream_job.py")
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with spark_stack(tmp_path_factory, "stream-stack") as stack:
        yield stack


@pytest.fixture(scope="module")
def address(stack: Stack) -> str:
    return stack.brokers[0].endpoint


@pytest.fixture(scope="module")
def file_root(stack: Stack) -> str:
    return str(stack.directory / "fragments")


@pytest.fixture(scope="module")
def spark(stack: Stack) -> Any:
    session = get_session("local[2]", app_name="stream-test")
    register(session)
    return session


def stream(spark: Any, address: str, file_root: str, selector: str, schema: str | None = None,
           **options: str) -> Any:
    reader = (spark.readStream.format("gazette").option("broker", address)
              .option("fileRoot", file_root).option("selector", selector))
    if schema is not None:
        reader = reader.schema(schema)
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load().select("journal", "offset", "uuid")


def run_available_now(df: Any, checkpoint: Path,
                      each: Callable[[int, list[Row]], None] | None = None) -> dict[int, list[Row]]:
    """Run `df` with Trigger.AvailableNow to its end; the rows of each micro-batch by id."""
    batches: dict[int, list[Row]] = {}

    def record(batch: Any, batch_id: int) -> None:
        rows = sorted((r.journal, r.offset, r.uuid) for r in batch.collect())
        batches[batch_id] = rows
        if each is not None:
            each(batch_id, rows)

    query = (df.writeStream.foreachBatch(record).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    return batches


def flat(batches: dict[int, list[Row]]) -> list[Row]:
    return sorted(row for rows in batches.values() for row in rows)


def test_a_transaction_split_across_micro_batches_comes_out_once_with_its_ack(
        spark: Any, address: str, file_root: str, tmp_path: Path) -> None:
    p = "stream-split"
    apply(address, p, ["a"])
    journal = f"{p}/a"
    append_to(address, journal, message_round(0))  # Ends with a message awaiting its ACK.
    df = stream(spark, address, file_root, f"suite={p}")

    first = flat(run_available_now(df, tmp_path / "cp"))
    append_to(address, journal, trailing_ack(0))
    second = run_available_now(df, tmp_path / "cp")

    pending = [row for row in committed(address, [journal]) if row not in first]
    assert len(pending) == 1 and pending[0][1] < fragments(address, journal)[-1].end - 100
    assert list(second.values()) == [pending]  # One batch, with the message before its ACK.
    assert sorted(first + flat(second)) == committed(address, [journal])


def test_max_bytes_bound_micro_batches_and_available_now_stops_at_its_target(
        spark: Any, address: str, file_root: str, tmp_path: Path) -> None:
    p = "stream-limit"
    names = [f"{p}/a", f"{p}/b"]
    apply(address, p, ["a", "b"])
    for r in range(4):
        for journal in names:
            append_to(address, journal, message_round(r))
    heads = {j: fragments(address, j)[-1].end for j in names}
    expected = committed(address, names)  # What was committed when the query started.

    def append_late(batch_id: int, rows: list[Row]) -> None:
        if batch_id == 0:  # After the target was fixed: not to be read.
            append_to(address, names[0], message_round(4))

    df = stream(spark, address, file_root, f"suite={p}", maxBytesPerTrigger="1000")
    query_batches = run_available_now(df, tmp_path / "cp", append_late)

    progress = json.loads((tmp_path / "cp" / "offsets" / str(max(query_batches))).read_text()
                          .splitlines()[-1])
    assert {j: e["offset"] for j, e in progress["journals"].items()} == heads
    assert len(query_batches) >= 2  # 3.4 kB in 1 kB micro-batches (a fragment at least)
    starts = json.loads((tmp_path / "cp" / "offsets" / "0").read_text().splitlines()[-1])
    previous = {j: e["offset"] for j, e in starts["journals"].items()}
    for batch_id in sorted(query_batches)[1:]:
        offsets = json.loads((tmp_path / "cp" / "offsets" / str(batch_id)).read_text()
                             .splitlines()[-1])
        now = {j: e["offset"] for j, e in offsets["journals"].items()}
        assert sum(now[j] - previous[j] for j in now) <= 1000 or sum(
            now[j] != previous[j] for j in now) == 1
        previous = now
    assert flat(query_batches) == expected
    assert len(committed(address, names)) > len(expected)  # The late round committed more.


def test_a_journal_created_mid_query_is_read_from_its_start(
        spark: Any, address: str, file_root: str, tmp_path: Path) -> None:
    p = "stream-new"
    apply(address, p, ["a"])
    append_to(address, f"{p}/a", message_round(0))
    out = tmp_path / "out"
    query = json_query(stream(spark, address, file_root, f"suite={p}"), tmp_path, out)
    try:
        query.processAllAvailable()
        apply(address, p, ["b"])
        append_to(address, f"{p}/b", message_round(0) + message_round(1))
        query.processAllAvailable()
    finally:
        query.stop()

    assert output_rows(spark, out) == committed(address, [f"{p}/a", f"{p}/b"])
    assert any(row[0] == f"{p}/b" for row in output_rows(spark, out))


def test_starting_offsets_latest_and_per_journal(
        spark: Any, address: str, file_root: str, tmp_path: Path) -> None:
    p = "stream-start"
    names = [f"{p}/a", f"{p}/b"]
    apply(address, p, ["a", "b"])
    for journal in names:
        append_to(address, journal, message_round(0))
    middle = fragments(address, names[0])[-1].end
    for journal in names:
        append_to(address, journal, message_round(1))
    head = fragments(address, names[0])[-1].end

    from_json = run_available_now(stream(spark, address, file_root, f"suite={p}",
                                         "journal STRING, offset LONG, uuid STRING, n LONG",
                                         startingOffsets=json.dumps({names[0]: middle})),
                                  tmp_path / "json")
    expected = sorted(committed(address, names[:1], offset=middle)
                      + committed(address, names[1:]))
    latest_df = stream(spark, address, file_root, f"suite={p}", startingOffsets="latest")
    latest = run_available_now(latest_df, tmp_path / "latest")
    append_to(address, names[0], message_round(2))
    after = run_available_now(latest_df, tmp_path / "latest")

    assert flat(from_json) == expected
    with pytest.raises(Exception, match=f"journal {p}/zzz is not one the selector 'suite={p}' "
                       "matches"):
        run_available_now(stream(spark, address, file_root, f"suite={p}",
                                 startingOffsets=json.dumps({f"{p}/zzz": 0})), tmp_path / "bad")
    assert flat(latest) == []
    assert flat(after) == committed(address, names[:1], offset=head)


def remove_fragments(stack: Stack, address: str, journal: str, begin: int, end: int) -> None:
    """Delete the persisted fragment files of `journal` within [begin, end), as a prune would."""
    directory = stack.directory / "fragments" / journal
    for path in directory.iterdir():
        if begin <= int(path.name[:16], 16) and int(path.name[17:33], 16) <= end:
            path.unlink()
    wait_listed_without(address, journal, begin)


def fail_then_skip(spark: Any, address: str, file_root: str, selector: str, checkpoint: Path
                   ) -> tuple[str, dict[int, list[Row]]]:
    """Resume the query of `checkpoint`: how it fails by default, what it reads from a copy
    of the checkpoint with failOnDataLoss=false."""
    shutil.copytree(checkpoint, checkpoint.with_name("skipping"))
    with pytest.raises(Exception) as failed:
        run_available_now(stream(spark, address, file_root, selector), checkpoint)
    skipped = run_available_now(stream(spark, address, file_root, selector,
                                       failOnDataLoss="false"), checkpoint.with_name("skipping"))
    return str(failed.value), skipped


def test_pruned_content_fails_the_query_or_is_skipped_with_fail_on_data_loss_false(
        spark: Any, stack: Stack, address: str, file_root: str, tmp_path: Path) -> None:
    p = "stream-loss"
    journal = f"{p}/a"
    apply(address, p, ["a"])
    append_to(address, journal, message_round(0))
    run_available_now(stream(spark, address, file_root, f"suite={p}"), tmp_path / "cp")
    seen = fragments(address, journal)[-1].end
    for r in (1, 2, 3):
        append_to(address, journal, message_round(r, ack_trailing=False))
    lost_end = fragments(address, journal)[-1].end
    append_to(address, journal, message_round(4, ack_trailing=False))
    wait_persisted_to(address, journal, lost_end)
    remove_fragments(stack, address, journal, seen, lost_end)

    failure, skipped = fail_then_skip(spark, address, file_root, f"suite={p}", tmp_path / "cp")

    assert (f"journal {journal}: offsets [{seen}, {lost_end}) were removed from the stores "
            "before the query read them") in failure
    assert flat(skipped) == committed(address, [journal], offset=lost_end)
    assert flat(skipped)


def test_a_journal_deleted_mid_query_fails_it_or_is_dropped_with_fail_on_data_loss_false(
        spark: Any, address: str, file_root: str, tmp_path: Path) -> None:
    p = "stream-gone"
    names = [f"{p}/a", f"{p}/b"]
    apply(address, p, ["a", "b"])
    for journal in names:
        append_to(address, journal, message_round(0))
    run_available_now(stream(spark, address, file_root, f"suite={p}"), tmp_path / "cp")
    (gone,) = journals(address, f"name={names[0]}")
    with_broker(address, lambda stub: apply_journals(stub, pb.ApplyRequest(changes=[
        pb.ApplyRequest.Change(expect_mod_revision=gone.mod_revision, delete=names[0])])))
    before = committed(address, names[1:])
    append_to(address, names[1], message_round(1))

    failure, skipped = fail_then_skip(spark, address, file_root, f"suite={p}", tmp_path / "cp")

    assert f"journal {names[0]} was deleted or no longer matches the selector" in failure
    assert flat(skipped) == sorted(set(committed(address, names[1:])) - set(before))
    assert flat(skipped)


def test_a_query_killed_mid_stream_resumes_from_its_checkpoint_exactly_once(
        spark: Any, address: str, file_root: str, tmp_path: Path) -> None:
    p = "stream-kill"
    names = [f"{p}/a", f"{p}/b"]
    apply(address, p, ["a", "b"])
    rounds = iter(range(100))

    def append_round() -> None:
        r = next(rounds)
        for journal in names:
            append_to(address, journal, message_round(r))

    for _ in range(3):
        append_round()
    out, checkpoint = tmp_path / "out", tmp_path / "cp"
    env = {**os.environ, "BROKER_FILE_ROOT": file_root,
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    running = subprocess.Popen([sys.executable, str(JOB), address, f"suite={p}", str(out),
                                str(checkpoint), "continuous", "700"], env=env,
                               start_new_session=True, stderr=subprocess.PIPE)
    try:
        seen, deadline = 0, time.monotonic() + 120
        while seen < 3:  # Each committed micro-batch, one more round appended.
            assert running.poll() is None, running.stderr.read().decode()[-3000:]  # type: ignore
            assert time.monotonic() < deadline, f"the query committed {seen} batches"
            if len(committed_batches(out)) > seen:
                seen += 1
                append_round()
            time.sleep(0.05)
    finally:
        os.killpg(running.pid, signal.SIGKILL)  # A backlog left: killed mid-stream.
        running.wait()
    before = output_rows(spark, out)
    for _ in range(3):
        append_round()

    # The same query again, here, with the same checkpoint, until it has caught up.
    (stream(spark, address, file_root, f"suite={p}", maxBytesPerTrigger="700").writeStream
     .format("json").option("checkpointLocation", str(checkpoint))
     .trigger(availableNow=True).start(str(out)).awaitTermination())

    got = output_rows(spark, out)
    assert before and len(before) < len(got)
    assert got == committed(address, names)


def committed_batches(out: Path) -> list[Path]:
    metadata = out / "_spark_metadata"
    return [f for f in metadata.iterdir() if f.name.isdigit()] if metadata.is_dir() else []


def test_a_selector_matching_nothing_yet_starts_and_picks_journals_up(
        spark: Any, address: str, file_root: str, tmp_path: Path) -> None:
    p = "stream-empty"
    out = tmp_path / "out"
    query = json_query(stream(spark, address, file_root, f"suite={p}"), tmp_path, out)
    try:
        query.processAllAvailable()
        apply(address, p, ["a"])
        append_to(address, f"{p}/a", message_round(0) + message_round(1))
        deadline = time.monotonic() + 60
        while len(output_rows(spark, out)) < len(committed(address, [f"{p}/a"])):
            assert query.isActive and time.monotonic() < deadline, query.exception()
            time.sleep(0.2)
    finally:
        query.stop()

    assert output_rows(spark, out) == committed(address, [f"{p}/a"])


def test_progress_reports_bytes_behind_the_write_heads_as_kafkas_source(
        spark: Any, address: str, file_root: str, tmp_path: Path) -> None:
    p = "stream-lag"
    names = [f"{p}/a", f"{p}/b"]
    apply(address, p, ["a", "b"])
    for r in range(3):
        append_to(address, names[0], message_round(r))
    append_to(address, names[1], message_round(0))
    heads = {j: fragments(address, j)[-1].end for j in names}
    query = (stream(spark, address, file_root, f"suite={p}", maxBytesPerTrigger="1000")
             .writeStream.foreachBatch(lambda batch, _: batch.count())
             .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True)
             .start())
    query.awaitTermination()

    lags = [latest_offset(progress)["lag"] for progress in query.recentProgress
            if latest_offset(progress)]
    first, last = lags[0], lags[-1]
    ends = json.loads((tmp_path / "cp" / "offsets" / "0").read_text().splitlines()[-1])
    behind = [heads[j] - ends["journals"][j]["offset"] for j in names]
    assert first == {"avgOffsetsBehindLatest": sum(behind) / 2,
                     "maxOffsetsBehindLatest": max(behind),
                     "minOffsetsBehindLatest": min(behind)}
    assert first["maxOffsetsBehindLatest"] > 0
    assert last == {"avgOffsetsBehindLatest": 0, "maxOffsetsBehindLatest": 0,
                    "minOffsetsBehindLatest": 0}


def latest_offset(progress: dict[str, Any]) -> dict[str, Any]:
    """The source's reported latest offset in a progress (a JSON text or object)."""
    latest = progress["sources"][0]["latestOffset"]
    return json.loads(latest) if isinstance(latest, str) else latest or {}


def test_a_restart_after_its_only_journal_was_deleted_goes_on_without_fail_on_data_loss(
        spark: Any, address: str, file_root: str, tmp_path: Path) -> None:
    p = "stream-sole"
    apply(address, p, ["a"])
    append_to(address, f"{p}/a", message_round(0))
    schema = None  # The journals' own columns: the query lists them at each start.
    run_available_now(stream(spark, address, file_root, f"suite={p}", schema), tmp_path / "cp")
    (gone,) = journals(address, f"name={p}/a")
    with_broker(address, lambda stub: apply_journals(stub, pb.ApplyRequest(changes=[
        pb.ApplyRequest.Change(expect_mod_revision=gone.mod_revision, delete=f"{p}/a")])))
    shutil.copytree(tmp_path / "cp", tmp_path / "skipping")

    with pytest.raises(Exception) as failed:
        run_available_now(stream(spark, address, file_root, f"suite={p}", schema),
                          tmp_path / "cp")
    skipped = run_available_now(stream(spark, address, file_root, f"suite={p}", schema,
                                       failOnDataLoss="false"), tmp_path / "skipping")

    assert f"journal {p}/a was deleted or no longer matches the selector" in str(failed.value)
    assert flat(skipped) == []


def test_a_continuous_trigger_is_refused_at_start_in_one_line(
        spark: Any, address: str, file_root: str, tmp_path: Path) -> None:
    p = "stream-continuous"
    apply(address, p, ["a"])
    df = stream(spark, address, file_root, f"suite={p}")

    with pytest.raises(Exception) as refused:
        (df.writeStream.format("console").option("checkpointLocation", str(tmp_path / "cp"))
         .trigger(continuous="1 second").start())

    assert "continuous" in str(refused.value).splitlines()[0].lower()
    assert "Unknown type of trigger" not in str(refused.value)


def test_an_abandoned_transaction_whose_begin_was_pruned_does_not_fail_the_query(
        spark: Any, stack: Stack, address: str, file_root: str, tmp_path: Path) -> None:
    p = "stream-abandoned"
    journal = f"{p}/a"
    apply(address, p, ["a"])
    # The second producer's trailing transaction is never acknowledged: abandoned.
    for r in range(3):
        append_to(address, journal, message_round(r, ack_trailing=False))
    df = stream(spark, address, file_root, f"suite={p}")
    run_available_now(df, tmp_path / "cp")
    seen = fragments(address, journal)[-1].end
    append_to(address, journal, message_round(3, ack_trailing=False))
    first = fragments(address, journal)[0]  # Round 0's, where the transaction began.
    assert first.end < seen
    wait_persisted_to(address, journal, first.end)
    remove_fragments(stack, address, journal, first.begin, first.end)

    after = run_available_now(df, tmp_path / "cp")

    assert flat(after) == committed(address, [journal], offset=seen)
    assert flat(after)



def test_a_streaming_read_on_a_standalone_cluster_splits_ranges_on_its_executors(
        address: str, file_root: str, cluster: Cluster, tmp_path: Path) -> None:  # noqa: F811
    p = "stream-cluster"
    names = [f"{p}/a", f"{p}/b"]
    apply(address, p, ["a", "b"])
    for r in range(5):
        for journal in names:
            append_to(address, journal, message_round(r))
    out = tmp_path / "out"
    on_cluster = get_session(cluster.master, app_name="stream-cluster-test")
    register(on_cluster)

    # Ranges of ~1 kB: transactions straddle the ranges one micro-batch is split into.
    (stream(on_cluster, address, file_root, f"suite={p}", splitBytes="1000",
            maxBytesPerTrigger="3000").writeStream.format("json")
     .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True)
     .start(str(out)).awaitTermination())

    assert output_rows(on_cluster, out) == committed(address, names)
    assert on_cluster.sparkContext.master == cluster.master

def json_query(df: Any, tmp_path: Path, out: Path) -> Any:
    """A running query of `df` into JSON files at `out`, checkpointed under `tmp_path`."""
    return (df.writeStream.format("json").option("checkpointLocation", str(tmp_path / "cp"))
            .trigger(processingTime="100 milliseconds").start(str(out)))
