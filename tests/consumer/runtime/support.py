"""Runtime test support: a ReplicaHost over real etcd, journals, apps and a gated stub.

`Host` is what the consumer service gives a replica: etcd, a journal client
to a real in-process broker, the app and its config, and status updates
max-merged under a ModRevision compare, as
docs/design/consumer.md#assignment-status says. Tests drive
ShardReplica through start / update(slot 0) / stop as the resolver does.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aetcd
from aetcd import rpc
from google.protobuf.duration_pb2 import Duration

from gazette_core.allocator.keys import assign_key, item_key
from gazette_core.broker.client.retry_reader import read_all
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.labels_ext import label_set
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol.status_ext import merge_status
from gazette_core.consumer.replica import ShardReplica
from gazette_core.consumer.txn.loop import TxnStats
from gazette_core.keyspace import etcd_util
from gazette_core.keyspace.keyspace import KeyValue
from gazette_core.message.uuid import Clock, Flags, build_uuid, get_flags, new_producer_id
from gazette_core.testing.broker import journal_spec
from tests.broker.support import append, create

ROOT = "/consumer.test"
SOURCE = "runtime/source"
OUT = "runtime/out"
LOG_PREFIX = "runtime/recovery"
HINTS = "/runtime/hints"
NDJSON = (("content-type", "application/x-ndjson"),)
RECOVERY = (("content-type", "application/x-gazette-recoverylog"),)


@dataclass
class Config:
    data_dir: str
    hint_interval_s: float = 300.0
    max_hot_standbys: int = 3


def shard_spec(shard_id: str = "shard-000", *, log: bool = True, max_s: float = 30.0,
               min_s: float = 0.0, **fields: Any) -> cpb.ShardSpec:
    spec = cpb.ShardSpec(
        id=shard_id, sources=[cpb.ShardSpec.Source(journal=SOURCE)],
        recovery_log_prefix=LOG_PREFIX if log else "", hint_prefix=HINTS if log else "",
        hint_backups=2 if log else 0, labels=label_set(),
        max_txn_duration=_duration(max_s), min_txn_duration=_duration(min_s))
    for name, value in fields.items():
        setattr(spec, name, value)
    return spec


def _duration(seconds: float) -> Duration:
    return Duration(seconds=int(seconds), nanos=round((seconds % 1) * 1e9))


async def create_journals(stub: Any, *, recovery_logs: tuple[str, ...] = ("shard-000",)
                          ) -> None:
    specs = [journal_spec(SOURCE, labels=NDJSON, length=16 << 20),
             journal_spec(OUT, labels=NDJSON, length=16 << 20)]
    specs += [journal_spec(f"{LOG_PREFIX}/{s}", labels=RECOVERY, length=16 << 20)
              for s in recovery_logs]
    await create(stub, *specs)


def _kv(key: str, kv: Any, decoded: object) -> KeyValue:
    return KeyValue(key=key, raw=bytes(kv.value), decoded=decoded,
                    create_revision=kv.create_revision, mod_revision=kv.mod_revision,
                    version=kv.version, lease=kv.lease)


async def get_kv(etcd: aetcd.Client, key: str) -> Any:
    resp = await etcd_util.txn(etcd, [], [etcd_util.get_op(key)])
    kvs = resp.responses[0].response_range.kvs
    return kvs[0] if kvs else None


async def get_json(etcd: aetcd.Client, key: str) -> Any:
    kv = await get_kv(etcd, key)
    return None if kv is None else json.loads(kv.value)


class Host:
    """A ReplicaHost for tests (the consumer service's part)."""

    def __init__(self, etcd: aetcd.Client, journals: Any, app: Any, config: Config) -> None:
        self.etcd = etcd
        self.journals = journals
        self.app = app
        self.config = config
        self.status_log: list[tuple[str, int]] = []
        self.observed: list[TxnStats] = []

    def observe_txn(self, stats: TxnStats) -> None:
        self.observed.append(stats)

    async def update_status(self, assignment_key: str, status: cpb.ReplicaStatus) -> None:
        while True:
            kv = await get_kv(self.etcd, assignment_key)
            if kv is None:
                return  # The assignment is gone: nothing to update.
            current = cpb.ReplicaStatus.FromString(kv.value)
            merged = merge_status(current, status)
            put = rpc.RequestOp(request_put=rpc.PutRequest(
                key=assignment_key.encode(), value=merged.SerializeToString(),
                ignore_lease=True))
            cmp = etcd_util.cmp_mod_revision(assignment_key, kv.mod_revision)
            if (await etcd_util.txn(self.etcd, [cmp], [put])).succeeded:
                self.status_log.append((assignment_key, merged.code))
                return

    async def put_spec(self, spec: cpb.ShardSpec) -> KeyValue:
        key = item_key(ROOT, spec.id)
        await etcd_util.txn(self.etcd, [], [etcd_util.put_op(key, spec.SerializeToString())])
        return _kv(key, await get_kv(self.etcd, key), spec)

    async def assign(self, shard_id: str, suffix: str, slot: int) -> KeyValue:
        """Create (or re-read) the assignment `shard#zone#suffix#slot`, empty (IDLE)."""
        key = assign_key(ROOT, shard_id, "zone", suffix, slot)
        if await get_kv(self.etcd, key) is None:
            await etcd_util.txn(self.etcd, [], [etcd_util.put_op(key, b"")])
        return await self.assignment(key)

    async def assignment(self, key: str) -> KeyValue:
        kv = await get_kv(self.etcd, key)
        return _kv(key, kv, cpb.ReplicaStatus.FromString(kv.value))

    async def move(self, old: KeyValue, slot: int) -> KeyValue:
        """The allocator's promotion: a new key at `slot`, the old one removed."""
        head, _ = old.key.rsplit("#", 1)
        key = f"{head}#{slot}"
        kv = await get_kv(self.etcd, old.key)
        await etcd_util.txn(self.etcd, [], [etcd_util.delete_op(old.key),
                                            etcd_util.put_op(key, bytes(kv.value))])
        return await self.assignment(key)

    async def status(self, key: str) -> cpb.ReplicaStatus:
        kv = await get_kv(self.etcd, key)
        return cpb.ReplicaStatus() if kv is None else cpb.ReplicaStatus.FromString(kv.value)

    async def wait_status(self, key: str, code: int, timeout: float = 20.0
                          ) -> cpb.ReplicaStatus:
        async with asyncio.timeout(timeout):
            while True:
                status = await self.status(key)
                if status.code >= code:
                    return status
                await asyncio.sleep(0.02)

    async def replica(self, spec: cpb.ShardSpec, suffix: str, slot: int) -> ShardReplica:
        """A started replica of `spec` on member `suffix` at `slot`."""
        replica = ShardReplica(self, await self.put_spec(spec),
                               await self.assign(spec.id, suffix, slot))
        replica.start()
        return replica

    async def promote(self, replica: ShardReplica) -> None:
        """Move `replica`'s assignment to slot 0 and tell it, as the resolver would."""
        moved = await self.move(replica.assignment, 0)
        spec = await self.put_spec(replica.shard.spec)
        replica.update(spec, moved)


async def eventually(check: Callable[[], Any], timeout: float = 20.0,
                     what: str = "condition") -> Any:
    """Poll `check()` (sync or async) until it returns something truthy."""
    try:
        async with asyncio.timeout(timeout):
            while True:
                result = check()
                if isinstance(result, Awaitable):
                    result = await result
                if result:
                    return result
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


@dataclass
class Gate:
    """Holds the responses of appends to some journals until opened."""

    closed: set[str] = field(default_factory=set)
    opened: asyncio.Event = field(default_factory=asyncio.Event)
    held: int = 0

    def close(self, journal: str) -> None:
        self.closed.add(journal)
        self.opened = asyncio.Event()

    def open(self) -> None:
        self.closed.clear()
        self.opened.set()


class _GatedCall:
    def __init__(self, call: Any, gate: Gate) -> None:
        self._call = call
        self._gate = gate
        self._journal = ""

    async def write(self, request: pb.AppendRequest) -> None:
        if request.journal:
            self._journal = request.journal
        await self._call.write(request)

    async def done_writing(self) -> None:
        await self._call.done_writing()

    def cancel(self) -> bool:
        return bool(self._call.cancel())

    def add_done_callback(self, callback: Any) -> None:
        self._call.add_done_callback(callback)

    def __await__(self) -> Any:
        return self._result().__await__()

    async def _result(self) -> Any:
        resp = await self._call
        if self._journal in self._gate.closed:
            self._gate.held += 1
            await self._gate.opened.wait()
        return resp


class GatedStub:
    """A journal stub whose Append responses wait while their journal's gate is closed.

    The broker commits the append at once; only its client learns of it late,
    which is how a slow append looks to the transaction loop.
    """

    def __init__(self, stub: Any, gate: Gate) -> None:
        self._stub = stub
        self.gate = gate

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stub, name)

    def Append(self, *args: Any, **kwargs: Any) -> _GatedCall:
        return _GatedCall(self._stub.Append(*args, **kwargs), self.gate)


class Producer:
    """Writes input messages to the source journal as a Gazette producer would."""

    def __init__(self, stub: Any, journal: str = SOURCE) -> None:
        self.stub = stub
        self.journal = journal
        self.id = new_producer_id()
        self.clock = Clock()
        self.clock.update()

    def line(self, n: int, flags: int) -> bytes:
        u = build_uuid(self.id, self.clock.tick(), flags)
        return json.dumps({"uuid": str(u), "n": n}, separators=(",", ":")).encode() + b"\n"

    async def _append(self, data: bytes) -> int:
        return int((await append(self.stub, self.journal, data)).commit.end)

    async def committed(self, *numbers: int) -> int:
        """Append messages committed on their own; returns the journal's new head."""
        return await self._append(b"".join(self.line(n, Flags.OUTSIDE_TXN) for n in numbers))

    async def uncommitted(self, *numbers: int) -> int:
        return await self._append(b"".join(self.line(n, Flags.CONTINUE_TXN) for n in numbers))

    async def ack(self) -> int:
        """Acknowledge (commit) every uncommitted message written so far."""
        return await self._append(self.line(0, Flags.ACK_TXN))


async def out_messages(stub: Any) -> list[tuple[int, int]]:
    """(flags, n) of every message in the output journal, in order."""
    data = await read_all(stub, OUT)
    out = []
    for line in data.splitlines():
        doc = json.loads(line)
        out.append((get_flags(uuid.UUID(doc["uuid"])), doc.get("n", 0)))
    return out
