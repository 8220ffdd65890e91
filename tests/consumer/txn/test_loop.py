"""Each rule of the transaction loop as its own scenario.

See docs/design/consumer.md#the-transaction-loop.

A real broker and etcd, a JSON store recorded into a real recovery log, and a
ShardReplica started as primary; commits are held (HeldCommits) or append
responses delayed (Gate) to look at the loop while it waits.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from gazette_core.broker.client.retry_reader import read_all
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.replica import ShardReplica
from gazette_core.keyspace import etcd_util
from gazette_core.message.uuid import Flags, get_clock, get_producer_id
from tests.broker.support import append
from tests.consumer.runtime.apps import Counter, HeldCommits, Num
from tests.consumer.runtime.conftest import Rig
from tests.consumer.runtime.support import (
    OUT,
    SOURCE,
    Producer,
    eventually,
    out_messages,
    shard_spec,
)

CONTINUE, ACK = Flags.CONTINUE_TXN, Flags.ACK_TXN
# How long a test watches a loop that must not move (it would within milliseconds).
QUIET_S = 0.3


async def primary(rig: Rig, app: Any, **spec: Any) -> tuple[ShardReplica, HeldCommits]:
    replica = await rig.replica(rig.host(app), shard_spec(**spec), "a", 0)
    await replica.wait_ready()
    return replica, app.stores[-1]


async def test_commit_waits_for_pending_appends(rig: Rig) -> None:
    app = Counter()
    _, store = await primary(rig, app)
    rig.gate.close(OUT)  # Appends to OUT commit at the broker; we learn of it late.
    await rig.producer.committed(1)
    await eventually(lambda: store.started == 1, what="the commit to start")
    wait_for = store.wait_fors[0]
    assert wait_for is not None
    await eventually(lambda: rig.gate.held == 1, what="the published append")
    await asyncio.sleep(QUIET_S)
    assert store.resolved == 0 and not wait_for.done() and not app.handles[0].done()
    rig.gate.open()
    await eventually(lambda: store.resolved == 1, what="the commit")
    assert app.handles[0].done()


async def test_acks_are_appended_only_after_the_commit(rig: Rig) -> None:
    app = Counter()
    _, store = await primary(rig, app)
    store.hold.clear()
    await rig.producer.committed(1)
    await eventually(lambda: store.started == 1 and app.handles[0].done(),
                     what="the commit to start behind the written message")
    await asyncio.sleep(QUIET_S)
    assert await out_messages(rig.stub) == [(CONTINUE, 10)]  # No ACK yet.
    assert dict(store.checkpoints[0].ack_intents).keys() == {OUT}
    store.hold.set()
    await eventually(lambda: store.resolved == 1)
    messages = await eventually(lambda: _with_acks(rig, 1), what="the ACK")
    assert messages == [(CONTINUE, 10), (ACK, 0)]


async def _with_acks(rig: Rig, count: int) -> list[tuple[int, int]] | None:
    messages = await out_messages(rig.stub)
    return messages if sum(f == ACK for f, _ in messages) >= count else None


async def test_next_commit_waits_for_the_previous_acks(rig: Rig) -> None:
    app = Counter()
    _, store = await primary(rig, app)
    store.hold.clear()
    await rig.producer.committed(1)
    await eventually(lambda: store.started == 1 and app.handles[0].done())
    rig.gate.close(OUT)  # The ACK of transaction 1 will be pending.
    store.hold.set()
    await eventually(lambda: store.resolved == 1 and rig.gate.held == 1,
                     what="the first commit and its ACK append")
    await rig.producer.committed(2)
    await eventually(lambda: app.consumed() == [1, 2], what="transaction 2 consuming")
    await asyncio.sleep(QUIET_S)
    assert store.started == 1  # Consumed, but not committing behind a pending ACK.
    rig.gate.open()
    await eventually(lambda: store.resolved == 2, what="the second commit")
    assert app.transactions() == [[1], [2]]


async def test_wait_for_ack_keeps_the_transaction_open_for_the_ack(rig: Rig) -> None:
    app = Counter(publish=False)
    _, store = await primary(rig, app)
    await rig.producer.uncommitted(2)  # Pending: nothing to consume yet.
    await Producer(rig.stub).committed(1)
    await eventually(lambda: app.consumed() == [1])
    await asyncio.sleep(QUIET_S)
    assert store.started == 0  # Open while a sequence it read is pending.
    await rig.producer.ack()
    await eventually(lambda: store.resolved == 1)
    assert app.transactions() == [[1, 2]]


async def test_without_wait_for_ack_a_stall_commits(rig: Rig) -> None:
    app = Counter(publish=False)
    _, store = await primary(rig, app, disable_wait_for_ack=True)
    await rig.producer.uncommitted(2)
    await Producer(rig.stub).committed(1)
    await eventually(lambda: store.resolved == 1, what="a commit without the ACK")
    await rig.producer.ack()
    await eventually(lambda: store.resolved == 2)
    assert app.transactions() == [[1], [2]]


async def test_max_duration_closes_a_transaction_waiting_for_an_ack(rig: Rig) -> None:
    app = Counter(publish=False)
    loop = asyncio.get_running_loop()
    _, store = await primary(rig, app, max_s=0.5)
    await rig.producer.uncommitted(2)  # Never acknowledged.
    started = loop.time()
    await Producer(rig.stub).committed(1)
    await eventually(lambda: store.resolved == 1, what="the commit at max duration")
    assert loop.time() - started >= 0.5
    assert app.transactions() == [[1]]
    producers = {bytes(p.id): p.state for p in store.checkpoints[0].sources[SOURCE].producers}
    assert producers[rig.producer.id].begin >= 0  # Its sequence is still open.


async def test_min_duration_keeps_a_transaction_open(rig: Rig) -> None:
    app = Counter(publish=False)
    loop = asyncio.get_running_loop()
    _, store = await primary(rig, app, min_s=2.0)
    started = loop.time()
    await rig.producer.committed(1)
    await eventually(lambda: app.consumed() == [1])
    await rig.producer.committed(2)
    await eventually(lambda: store.resolved == 1, what="the commit at min duration")
    assert loop.time() - started >= 2.0
    assert app.transactions() == [[1, 2]]


async def test_defer_to_next_transaction(rig: Rig) -> None:
    app = Counter(publish=False, defer={2})
    _, store = await primary(rig, app, min_s=1.0)
    await rig.producer.committed(1, 2, 3)
    await eventually(lambda: store.resolved >= 2 and app.consumed() == [1, 2, 3])
    assert app.transactions()[0] == [1]
    assert app.transactions()[1][0] == 2  # Offered again first.
    first_commit = store.checkpoints[0].sources[SOURCE].read_through
    assert first_commit < store.checkpoints[-1].sources[SOURCE].read_through


async def test_a_deferring_transaction_checkpoints_just_before_the_deferred_message(
        rig: Rig) -> None:
    """Messages 1-3 come in one read chunk, which the sequencer settles in bulk before any
    is consumed; the transaction that consumed only 1 must still record 1 as the last one
    acknowledged, so that a restart from its checkpoint delivers 2 and 3 again."""
    app = Counter(publish=False, defer={2})
    _, store = await primary(rig, app)
    await rig.producer.committed(1, 2, 3)
    await eventually(lambda: store.resolved >= 2 and app.consumed() == [1, 2, 3])
    first, second, third = (await read_all(rig.stub, SOURCE)).splitlines(keepends=True)
    source = store.checkpoints[0].sources[SOURCE]
    assert source.read_through == len(first)
    (producer,) = source.producers
    assert producer.state.last_ack == get_clock(uuid.UUID(json.loads(first)["uuid"]))
    last = store.checkpoints[-1].sources[SOURCE]
    assert last.read_through == len(first) + len(second) + len(third)


async def test_deferring_the_first_message_fails_the_shard(rig: Rig) -> None:
    app = Counter(publish=False, defer={1})
    replica, store = await primary(rig, app)
    await rig.producer.committed(1)
    host = replica.host
    status = await host.wait_status(replica.assignment.key, cpb.ReplicaStatus.FAILED)
    assert "deferred the first message" in status.errors[0]
    assert store.started == 0


class AsyncCounter(Counter):
    """Every method a coroutine."""

    async def new_message(self, spec: Any) -> Num:  # type: ignore[override]
        return Num()

    async def begin_txn(self, shard: Any, store: Any) -> None:  # type: ignore[override]
        await asyncio.sleep(0)
        super().begin_txn(shard, store)

    async def finalize_txn(self, shard: Any, store: Any,  # type: ignore[override]
                           publisher: Any) -> None:
        await asyncio.sleep(0)
        super().finalize_txn(shard, store, publisher)

    async def finished_txn(self, shard: Any, store: Any,  # type: ignore[override]
                           commit: Any) -> None:
        await asyncio.sleep(0)
        super().finished_txn(shard, store, commit)


async def test_async_application_methods(rig: Rig) -> None:
    app = AsyncCounter()
    replica, store = await primary(rig, app)
    head = await rig.producer.committed(1, 2, 3)
    read_through, publish_at = await replica.wait_read_through({SOURCE: head})
    assert read_through[SOURCE] == head and OUT in publish_at
    assert sorted(store.inner.state["seen"]) == [1, 2, 3]
    kinds = [k for k, _ in app.events]
    assert kinds[0] == "begin" and "finalize" in kinds and "finished" in kinds
    observed = replica.host.observed  # type: ignore[attr-defined]
    assert sum(s.messages for s in observed) == 3 and sum(s.bytes for s in observed) == head
    assert all(s.shard == "shard-000" and s.duration_s >= 0 for s in observed)


async def test_recovered_ack_intents_are_sent_again_first(rig: Rig) -> None:
    app_a = Counter()
    a, store_a = await primary(rig, app_a)
    await a.wait_read_through({SOURCE: await rig.producer.committed(1)})
    await eventually(lambda: _with_acks(rig, 1), what="A's ACK")
    await a.stop()  # Its last checkpoint holds the ACK intent of its last transaction.
    await etcd_util.txn(rig.etcd, [], [etcd_util.delete_op(a.assignment.key)])
    head = await rig.producer.committed(2)  # Ready for B the moment it reads.

    app_b = Counter()
    b = await rig.replica(rig.host(app_b), shard_spec(), "b", 0)
    await b.wait_read_through({SOURCE: head})
    lines = (await read_all(rig.stub, OUT)).splitlines()
    assert lines[2] == lines[1] == store_a.checkpoints[-1].ack_intents[OUT].rstrip(b"\n")
    assert [f for f, _ in await out_messages(rig.stub)][:4] == [CONTINUE, ACK, ACK, CONTINUE]
    # Every primary incarnation publishes as a new producer.
    assert _producer(lines[0]) != _producer(lines[3])


def _producer(line: bytes) -> bytes:
    return get_producer_id(uuid.UUID(json.loads(line)["uuid"]))


async def test_a_sequence_longer_than_the_ring_is_replayed_from_the_journal(rig: Rig) -> None:
    app = Counter(publish=False)
    replica, store = await primary(rig, app, ring_buffer_size=2)
    await rig.producer.uncommitted(1, 2, 3, 4, 5)
    head = await rig.producer.ack()
    await replica.wait_read_through({SOURCE: head})
    assert app.consumed() == [1, 2, 3, 4, 5]
    assert sorted(store.inner.state["seen"]) == [1, 2, 3, 4, 5]


async def test_a_duplicate_moves_progress_without_a_transaction(rig: Rig) -> None:
    app = Counter(publish=False)
    replica, store = await primary(rig, app)
    line = rig.producer.line(1, Flags.OUTSIDE_TXN)
    await replica.wait_read_through({SOURCE: await append_raw(rig, line)})
    head = await append_raw(rig, line)  # The same message again: already acknowledged.
    read_through, _ = await replica.wait_read_through({SOURCE: head})
    assert read_through[SOURCE] == head
    assert app.consumed() == [1] and store.started == 1


async def append_raw(rig: Rig, data: bytes) -> int:
    return int((await append(rig.stub, SOURCE, data)).commit.end)


async def test_a_source_that_cannot_be_read_fails_the_shard(rig: Rig) -> None:
    spec = shard_spec()
    spec.sources[0].journal = "runtime/no-such-source"
    host = rig.host(Counter())
    replica = await rig.replica(host, spec, "a", 0)
    status = await host.wait_status(replica.assignment.key, cpb.ReplicaStatus.FAILED)
    assert "runtime/no-such-source" in status.errors[0]


async def test_a_primary_aborted_as_it_gives_up_waiting_for_a_message_ends(rig: Rig) -> None:
    """The loop cancels its wait for the next message when a timer fires; a cancel of the
    whole loop (an abort, a dying process) that lands while that wait unwinds must end the
    loop, not be taken for the wait's own end (the loop would wait for messages for ever)."""
    replica, _ = await primary(rig, Counter(), min_s=0.2)
    assert replica.loop is not None
    queue = replica.loop.channel.queue
    take = queue.get
    unwinding, release = asyncio.Event(), asyncio.Event()

    async def slow_to_unwind() -> Any:
        try:
            return await take()
        except asyncio.CancelledError:
            unwinding.set()
            await release.wait()
            raise

    queue.get = slow_to_unwind  # type: ignore[method-assign]
    await rig.producer.committed(1)  # opens a transaction held open for min_s
    await eventually(unwinding.is_set, what="the timer to cancel the wait for a message")
    aborting = asyncio.ensure_future(replica.abort())
    await asyncio.sleep(0)  # the abort's cancel reaches the loop while its wait unwinds
    release.set()
    async with asyncio.timeout(10):
        await aborting
