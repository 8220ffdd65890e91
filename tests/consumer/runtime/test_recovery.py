"""Recovery, standbys and promotion: hints, tailing, hand-off and fencing.

See docs/design/recoverylog.md#recovery.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.replica import ShardReplica
from gazette_core.consumer.shard import ShardStoppedError
from gazette_core.keyspace import etcd_util
from gazette_core.testing.broker import journal_spec
from tests.broker.support import create
from tests.consumer.runtime.apps import Counter, seen
from tests.consumer.runtime.conftest import Rig
from tests.consumer.runtime.support import (
    HINTS,
    LOG_PREFIX,
    NDJSON,
    OUT,
    SOURCE,
    Host,
    eventually,
    get_json,
    get_kv,
    shard_spec,
)

Code = cpb.ReplicaStatus
PRIMARY_HINTS = f"{HINTS}/shard-000.primary"
BACKUP0 = f"{HINTS}/shard-000.backup.0"
LOG = f"{LOG_PREFIX}/shard-000"


async def start(rig: Rig, app: Any, suffix: str, slot: int, **config: Any
                ) -> tuple[Host, ShardReplica]:
    host = rig.host(app, **config)
    return host, await rig.replica(host, shard_spec(), suffix, slot)


async def hand_over(host: Host, old: ShardReplica, new: ShardReplica) -> None:
    """The allocator's move: the old primary's assignment goes, the standby takes slot 0."""
    await etcd_util.txn(host.etcd, [], [etcd_util.delete_op(old.assignment.key)])
    await host.promote(new)


async def test_standby_tails_from_hints_and_takes_over_the_committed_state(rig: Rig) -> None:
    app_a, app_b = Counter(kind="sqlite"), Counter(kind="sqlite")
    _, a = await start(rig, app_a, "a", 0, hint_interval_s=0.05)
    await a.wait_ready()
    await a.wait_read_through({SOURCE: await rig.producer.committed(1, 2, 3)})
    hints = await eventually(lambda: get_json(rig.etcd, PRIMARY_HINTS), what="primary hints")
    assert hints["log"] == LOG and hints["live_nodes"]
    await rig.producer.committed(4)

    host_b, b = await start(rig, app_b, "b", 1)
    await host_b.wait_status(b.assignment.key, Code.STANDBY)
    assert [code for _, code in host_b.status_log] == [Code.BACKFILL, Code.STANDBY]
    assert b.playback is not None and b.playback.bytes_read > 0 and b.playback.log == LOG
    await a.wait_read_through({SOURCE: await rig.producer.committed(5)})  # B tails this.
    a_dir = a.directory
    await a.stop()
    assert not os.path.exists(a_dir)

    await hand_over(host_b, a, b)
    await b.wait_ready()
    assert b.shard.recovered_hints is not None and b.shard.recovered_hints.log == LOG
    await b.wait_read_through({SOURCE: await rig.producer.committed(6)})
    assert await seen(app_b.stores[0].inner) == [1, 2, 3, 4, 5, 6]
    assert app_b.consumed() == [6]  # Nothing before 6 was consumed again.
    assert (await host_b.status(b.assignment.key)).code == Code.PRIMARY


async def test_a_zombie_primarys_commit_is_fenced_after_hand_off(rig: Rig) -> None:
    app_a, app_b = Counter(), Counter()
    host_a, a = await start(rig, app_a, "a", 0)
    await a.wait_ready()
    await a.wait_read_through({SOURCE: await rig.producer.committed(1)})
    host_b, b = await start(rig, app_b, "b", 1)
    await host_b.wait_status(b.assignment.key, Code.STANDBY)
    # B is promoted while A still runs (A missed its lease, say).
    await host_b.promote(b)
    await b.wait_ready()
    head = await rig.producer.committed(2)
    await b.wait_read_through({SOURCE: head})
    status = await host_a.wait_status(a.assignment.key, Code.FAILED)
    assert "REGISTER_MISMATCH" in status.errors[0] or "fenced" in status.errors[0]
    assert app_a.consumed() == [1, 2] and app_a.stores[0].resolved == 1
    assert await seen(app_b.stores[0].inner) == [1, 2]
    try:
        await a.wait_read_through({SOURCE: head})
        raise AssertionError("a failed primary answered a read-through wait")
    except ShardStoppedError:
        pass


async def test_a_crashed_primarys_half_transaction_is_not_recovered(rig: Rig) -> None:
    app_a, app_b = Counter(kind="sqlite"), Counter(kind="sqlite")
    _, a = await start(rig, app_a, "a", 0)
    await a.wait_ready()
    first = await rig.producer.committed(1)
    await a.wait_read_through({SOURCE: first})
    host_b, b = await start(rig, app_b, "b", 1)
    await host_b.wait_status(b.assignment.key, Code.STANDBY)
    store_a = app_a.stores[0]
    # Transaction 2 commits in A's local database, but its recording waits behind the
    # message it published, whose append is held: none of it reaches the log.
    rig.gate.close(OUT)
    await rig.producer.committed(2)
    await eventually(lambda: store_a.started == 2 and rig.gate.held == 1,
                     what="A's second commit to wait on its published message")
    assert a._task is not None
    a._task.cancel()  # A dies here.

    await hand_over(host_b, a, b)
    await b.wait_ready()
    rig.gate.open()
    restored = app_b.stores[0].restored
    assert restored is not None and restored.sources[SOURCE].read_through == first
    head = await rig.producer.committed(3)
    await b.wait_read_through({SOURCE: head})
    assert await seen(app_b.stores[0].inner) == [1, 2, 3]
    assert app_b.consumed() == [2, 3]  # 2 again: A's transaction 2 never happened.


async def test_backup_hints_rotate_only_after_a_successful_restore(rig: Rig) -> None:
    host, failing = await start(rig, Counter(fail_restore=True), "a", 0)
    status = await host.wait_status(failing.assignment.key, Code.FAILED)
    assert "restore failed on purpose" in status.errors[0]
    assert await get_kv(rig.etcd, BACKUP0) is None
    await failing.stop()
    await etcd_util.txn(rig.etcd, [], [etcd_util.delete_op(failing.assignment.key)])

    host, ok = await start(rig, Counter(), "b", 0)
    await ok.wait_ready()
    backup = await get_json(rig.etcd, BACKUP0)
    assert backup is not None and backup["log"] == LOG
    assert await get_kv(rig.etcd, PRIMARY_HINTS) is None  # Not written during recovery.


async def test_graceful_stop_commits_the_open_transaction_and_removes_files(rig: Rig) -> None:
    app = Counter()
    host, a = await start(rig, app, "a", 0)
    a.shard.spec.min_txn_duration.FromSeconds(60)  # The transaction stays open.
    await a.wait_ready()
    await rig.producer.committed(1)
    await eventually(lambda: app.consumed() == [1])
    assert app.stores[0].started == 0
    directory = a.directory
    await asyncio.gather(a.stop(), a.stop())  # The resolver and a shutdown, say.
    assert app.stores[0].resolved == 1 and app.stores[0].started == 1
    assert not os.path.exists(directory)
    assert (await host.status(a.assignment.key)).code == Code.PRIMARY


async def test_a_shard_without_recovery_log_goes_straight_to_standby(rig: Rig) -> None:
    class Memory(Counter):
        async def new_store(self, shard: Any, recorder: Any) -> Any:
            assert recorder is None
            return await super().new_store(shard, _NoLog(rig.tmp / "memory"))

    host = rig.host(Memory())
    replica = await rig.replica(host, shard_spec(log=False), "a", 1)
    await host.wait_status(replica.assignment.key, Code.STANDBY)
    assert [code for _, code in host.status_log] == [Code.STANDBY]
    await host.promote(replica)
    await replica.wait_ready()
    assert replica.directory == ""


class _NoLog:
    """A stand-in recording for a store kept without a recovery log."""

    def __init__(self, directory: Any) -> None:
        self.directory = str(directory)

    def open_file(self, path: str, *, create: bool, truncate: bool) -> Any:
        return self

    def write_at(self, data: bytes, offset: int) -> None:
        pass

    def remove(self, path: str) -> None:
        pass

    def link(self, src: str, dst: str) -> None:
        pass

    def rename(self, src: str, dst: str) -> None:
        pass

    async def barrier(self, wait_for: Any = None) -> None:
        if wait_for is not None:
            await wait_for


async def test_a_log_that_is_missing_or_not_a_recovery_log_fails_the_replica(rig: Rig) -> None:
    await create(rig.stub, journal_spec(f"{LOG_PREFIX}/shard-ndjson", labels=NDJSON))
    host = rig.host(Counter())
    wrong = await rig.replica(host, shard_spec("shard-ndjson"), "a", 1)
    missing = await rig.replica(host, shard_spec("shard-missing"), "a", 1)
    status = await host.wait_status(wrong.assignment.key, Code.FAILED)
    assert "is not a recovery log" in status.errors[0]
    assert "application/x-ndjson" in status.errors[0]
    status = await host.wait_status(missing.assignment.key, Code.FAILED)
    assert status.errors == [f"recovery log '{LOG_PREFIX}/shard-missing' does not exist"]


async def test_a_stopped_standby_removes_its_directory(rig: Rig) -> None:
    host, standby = await start(rig, Counter(), "a", 1)
    await host.wait_status(standby.assignment.key, Code.STANDBY)
    directory = standby.directory
    assert os.path.isdir(directory)
    await standby.stop()
    assert not os.path.exists(directory)
    try:
        await standby.wait_ready()
        raise AssertionError("a stopped standby became ready")
    except ShardStoppedError:
        pass


async def test_primary_hints_are_written_on_a_timer_while_the_assignment_is_ours(
        rig: Rig) -> None:
    _, a = await start(rig, Counter(), "a", 0, hint_interval_s=0.05)
    await a.wait_ready()  # Idle: no transaction runs, hints are written all the same.
    await eventually(lambda: get_json(rig.etcd, PRIMARY_HINTS), what="primary hints")
    # The assignment is re-created under the replica (a new CreateRevision)...
    key = a.assignment.key
    await etcd_util.txn(rig.etcd, [], [etcd_util.delete_op(key), etcd_util.delete_op(
        PRIMARY_HINTS)])
    await etcd_util.txn(rig.etcd, [], [etcd_util.put_op(key, b"")])
    await asyncio.sleep(0.3)  # ...so no further hints write gets through.
    assert await get_kv(rig.etcd, PRIMARY_HINTS) is None
