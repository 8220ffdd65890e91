"""Consumer figures: message throughput of one shard, publish-to-consume latency, failover.

- `consume_{sqlite,json}_msgs_per_s`: small JSON messages (already in an R=1 journal)
  through one shard counting them per key into its recorded store, wait-for-ack on;
  against `consume_ceiling_msgs_per_s`, reading and decoding the same messages (as a
  StructMessage) with `read_committed()` and no consumer (`consume_{sqlite,json}_ratio`).
- `e2e_p50_ms` / `e2e_p99_ms`: from `publish_committed` to `consume_message`, one
  message at a time; against the run's bare append round trip (`e2e_p50_vs_floor`,
  `e2e_p99_vs_floor_p99`: measured here when the module runs alone).
- `failover_s`: a consumer process SIGKILLed to its hot standby serving as PRIMARY,
  with the consumers' Etcd lease TTL beside it (`failover_lease_s`): a killed
  process is noticed only when its lease expires.

The consumer of the first two runs in this process (on the stack's etcd and broker);
the failover runs `gazctl local` consumer processes.
Run alone with `python -m bench.consume_bench`.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from bench import ceiling
from examples.specs import example_journals, example_shards
from gazette_core.broker.client.channel import close_channels
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.store.interface import Store
from gazette_core.consumer.store.json_file import JSONFileStore
from gazette_core.consumer.store.sqlite import SQLiteStore
from gazette_core.local import stack as local_stack
from gazette_core.message.acks import is_acknowledgement
from gazette_core.message.committed import read_committed
from gazette_core.message.framing import JSON_LINES, framing_for
from gazette_core.message.interfaces import Envelope, JSONMessage, Message
from gazette_core.message.structs import StructMessage
from gazette_core.testing.consumer import ConsumerHarness, consumer_harness
from gazette_core.testing.consumer_stack import StackConsumers
from gazette_core.testing.etcd import free_port

MESSAGES = int(os.environ.get("BENCH_CONSUME_MSGS", "200000"))
LATENCY_SAMPLES = int(os.environ.get("BENCH_E2E_SAMPLES", "500"))
FLOOR_SAMPLES = 2000  # as many as bench/__main__.py takes
FAILOVER_LEASE_S = 5
SOURCE = "bench/consume/input"
SCHEMA = "CREATE TABLE IF NOT EXISTS counts (k TEXT PRIMARY KEY, n INTEGER NOT NULL)"
T = TypeVar("T")


@dataclass
class Tick(JSONMessage):
    uuid: str = ""
    key: str = ""
    sent_ns: int = 0


class StructTick(StructMessage):
    """Tick as a struct message: what the ceiling and the shards read."""

    key: str = ""
    sent_ns: int = 0


def to_source(_: Message) -> tuple[str, Any]:
    return SOURCE, framing_for(JSON_LINES)


class CountApp:
    """Counts messages per key: a cache per transaction, flushed in finalize_txn.

    The store is SQLite or JSON by the shard label `store`; `latencies_ms`
    keeps each message's age on arrival, for the latency run.
    """

    def __init__(self) -> None:
        self.cache: Counter[str] = Counter()
        self.latencies_ms: list[float] = []

    async def new_store(self, shard: Any, recorder: Any) -> Store:
        kind = next((lb.value for lb in shard.spec.labels.labels if lb.name == "store"), "")
        if kind == "json":
            return await JSONFileStore.open(recorder.directory, recorder, initial_state={})
        return await SQLiteStore.open(recorder.directory, recorder, bootstrap_sql=SCHEMA)

    def new_message(self, spec: pb.JournalSpec) -> Message:
        return StructTick()

    def consume_message(self, shard: Any, store: Store, env: Envelope, publisher: Any) -> None:
        msg = env.message
        assert isinstance(msg, StructTick)
        if is_acknowledgement(env):
            return
        self.cache[msg.key] += 1
        if msg.sent_ns:
            self.latencies_ms.append((time.time_ns() - msg.sent_ns) / 1e6)

    async def finalize_txn(self, shard: Any, store: Store, publisher: Any) -> None:
        cache, self.cache = self.cache, Counter()
        if isinstance(store, SQLiteStore):
            upsert = ("INSERT INTO counts VALUES (?, ?) ON CONFLICT(k)"
                      " DO UPDATE SET n = n + excluded.n")
            await store.run(lambda conn: conn.executemany(upsert, cache.items()))
        elif isinstance(store, JSONFileStore):
            for key, n in cache.items():
                store.state[key] = store.state.get(key, 0) + n


async def _fill(h: ConsumerHarness, count: int) -> int:
    """Publish `count` messages over 1000 keys; the journal's write head."""
    await h.create_journals(SOURCE)
    head = 0
    for start in range(0, count, 5000):
        head = await h.publish(to_source, *(Tick(key=f"k{i % 1000:04d}")
                                            for i in range(start, min(count, start + 5000))))
    return head


async def _ceiling(h: ConsumerHarness, head: int) -> float:
    start, n = time.perf_counter(), 0
    async for env in read_committed(h.journals, SOURCE, lambda _: StructTick(), block=False):
        n += 1
        if env.end >= head:
            break
    return n / (time.perf_counter() - start)


async def _shard_rate(h: ConsumerHarness, kind: str, head: int, count: int) -> float:
    """Messages per second of a new shard reading SOURCE, from its first commit to head."""
    shard = f"bench-{kind}"
    await h.create_shards(h.shard_spec(shard, [SOURCE], labels=[("store", kind)]))
    first = (await h.wait_consumed(shard, {SOURCE: 1}))[SOURCE]
    start = time.perf_counter()
    await h.wait_consumed(shard, {SOURCE: head})
    elapsed = time.perf_counter() - start
    return count * (head - first) / head / elapsed


async def _latency(h: ConsumerHarness, app: CountApp) -> tuple[float, float]:
    journal = "bench/consume/latency"
    await h.create_journals(journal)
    await h.create_shards(h.shard_spec("bench-latency", [journal]))
    await h.wait_consumed("bench-latency", {journal: 0})
    app.latencies_ms.clear()
    for _ in range(LATENCY_SAMPLES):
        await h.publish(lambda _: (journal, framing_for(JSON_LINES)),
                        Tick(key="x", sent_ns=time.time_ns()))
        await asyncio.sleep(0.005)  # low load: one message in flight
    await h.wait_consumed("bench-latency")
    samples = sorted(app.latencies_ms)
    return statistics.median(samples), samples[int(len(samples) * 0.99)]


async def measure(stack: local_stack.Stack) -> dict[str, float]:
    app = CountApp()
    out: dict[str, float] = {}
    async with consumer_harness(lambda: app, etcd_endpoint=stack.etcd.endpoint,
                                broker_endpoint=stack.brokers[0].endpoint) as h:
        head = await _fill(h, MESSAGES)
        out["consume_ceiling_msgs_per_s"] = await _ceiling(h, head)
        for kind in ("sqlite", "json"):
            rate = await _shard_rate(h, kind, head, MESSAGES)
            out[f"consume_{kind}_msgs_per_s"] = rate
            out[f"consume_{kind}_ratio"] = rate / out["consume_ceiling_msgs_per_s"]
        out["e2e_p50_ms"], out["e2e_p99_ms"] = await _latency(h, app)
    return out


async def failover(directory: Path) -> dict[str, float]:
    """Seconds from SIGKILL of a shard's primary process to its standby being PRIMARY."""
    stack = await StackConsumers.up(directory, consumers=2, lease=FAILOVER_LEASE_S,
                                    app="examples.stream_sum:Summer")
    try:
        await stack.apply_journals(example_journals("stream_sum"))
        shard = example_shards("stream_sum")[0]
        await stack.apply_shards([shard])
        await _standing_by(stack, shard.id)
        victim = (await stack.primaries())[shard.id]
        await stack.kill(victim)
        (takeover,) = await stack.takeovers([shard.id], victim, limit=FAILOVER_LEASE_S + 60)
        return {"failover_s": takeover.seconds, "failover_lease_s": float(FAILOVER_LEASE_S)}
    finally:
        await stack.kill_all()


async def _standing_by(stack: StackConsumers, shard: str) -> None:
    """Until `shard` has a PRIMARY and a STANDBY replica."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for entry in await stack.list_shards():
            codes = sorted(s.code for s in entry.status)
            if entry.spec.id == shard and codes == [cpb.ReplicaStatus.STANDBY,
                                                    cpb.ReplicaStatus.PRIMARY]:
                return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{shard} never had a primary and a standby")


async def _closing(work: Awaitable[T]) -> T:
    """`work`, then the channels it dialed closed (before its event loop ends)."""
    try:
        return await work
    finally:
        await close_channels()


def run(tmp: Path, floor_p50_ms: float | None = None,
        floor_p99_ms: float | None = None) -> dict[str, float]:
    """Every figure, each stack in its own directory under `tmp`; without the append
    floor's p50 (ms) it is measured here, as `bench/__main__.py` measures it."""
    if floor_p50_ms is None:
        floor_p50_ms, floor_p99_ms = _floor()
    stack = local_stack.up(tmp / "consume", brokers=1, activate=False)
    try:
        out = asyncio.run(_closing(measure(stack)))
    finally:
        local_stack.down(stack.directory)
    out.update(asyncio.run(_closing(failover(tmp / "failover"))))
    if floor_p50_ms:
        out["e2e_p50_vs_floor"] = out["e2e_p50_ms"] / floor_p50_ms
    if floor_p99_ms:
        out["e2e_p99_vs_floor_p99"] = out["e2e_p99_ms"] / floor_p99_ms
    return {k: round(v, 3) for k, v in out.items()}


def _floor() -> tuple[float, float]:
    """(p50, p99) ms of the bare append round trip (bench/ceiling.py's mini append)."""
    port = free_port()
    server = ceiling.start_server(port)
    try:
        # channel_ready() in there waits for the server process to listen.
        return asyncio.run(ceiling.measure_mini_append(port, FLOOR_SAMPLES))
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="gazette-consume-bench-") as tmp:
        print(json.dumps(run(Path(tmp)), sort_keys=True))
