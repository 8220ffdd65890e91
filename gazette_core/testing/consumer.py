"""Test an application in-process: real Etcd, a real broker and real consumers running it.

    async with consumer_harness(MyApp) as h:
        await h.create_journals("my/input", labels=[("app.gazette.dev/message-type", "In")])
        await h.create_shards(h.shard_spec("my-shard", ["my/input"]))
        offset = await h.publish(mapping, MyMessage(...))
        await h.wait_consumed("my-shard", {"my/input": offset})
        results = await h.committed_messages("my/output", lambda _: MyResult())

Everything runs on loopback in one event loop: an etcd subprocess (or yours,
by `etcd_endpoint`), an in-process broker (or your brokers, by
`broker_endpoint`) and one or more in-process consumers, each a
ConsumerService with its own data directory and the app built anew by
`app_factory`. `crash(shard)` kills the shard's primary consumer without a
hand-off (its Etcd lease is revoked, as if it had expired) and starts a
replacement, so a test sees recovery from the recovery log as production does.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
import warnings
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import grpc

from gazette_core.broker.client.append_service import AppendService
from gazette_core.broker.client.channel import journal_stub
from gazette_core.broker.client.journals import apply_journals, fetch_write_head
from gazette_core.broker.client.routing import Router
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.durations_ext import from_seconds
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol import consumer_pb2_grpc as cpb_grpc
from gazette_core.consumer.protocol.shard_spec_ext import recovery_log
from gazette_core.errors import GazetteError
from gazette_core.message.committed import read_committed
from gazette_core.message.framing import CONTENT_TYPE_LABEL, JSON_LINES
from gazette_core.message.interfaces import Message
from gazette_core.message.mapping import Mapping
from gazette_core.message.publisher import Publisher
from gazette_core.testing.broker import broker_config, journal_spec, running_broker
from gazette_core.testing.consumer_inprocess import InProcessConsumer
from gazette_core.testing.etcd import EtcdServer

RECOVERY_LOG_TYPE = "application/x-gazette-recoverylog"
WAIT_S = 30.0  # bound of every wait of the harness
Labels = Iterable[tuple[str, str]]


class HarnessError(AssertionError):
    """A harness wait ran out: what was awaited, and what was seen last."""


class ConsumerHarness:
    """Helpers over a running etcd, broker and consumers; made by `consumer_harness`."""

    def __init__(self, directory: Path, etcd_endpoint: str, broker_endpoint: str,
                 app_factory: Callable[[], Any], lease_s: int) -> None:
        self.directory = directory
        self.etcd_endpoint = etcd_endpoint
        self.broker_endpoint = broker_endpoint
        self.app_factory = app_factory
        self.lease_s = lease_s
        self.journals = Router(journal_stub(broker_endpoint))
        self.consumers: list[InProcessConsumer] = []
        self._appender = AppendService(self.journals)
        self.publisher = Publisher(self._appender)

    # -- consumers ------------------------------------------------------------

    async def add_consumer(self) -> InProcessConsumer:
        """Start one more consumer running a new app from `app_factory`."""
        consumer = InProcessConsumer(
            self.app_factory(), self.directory / f"consumer-{len(self.consumers) + 1}",
            etcd_endpoint=self.etcd_endpoint, broker_endpoint=self.broker_endpoint,
            lease_s=self.lease_s, suffix=f"consumer-{len(self.consumers) + 1}")
        await consumer.start()
        self.consumers.append(consumer)
        return consumer

    async def stop_consumer(self, consumer: InProcessConsumer) -> None:
        """A graceful exit: its primaries move to their standbys before it leaves."""
        await consumer.stop()

    @property
    def live(self) -> list[InProcessConsumer]:
        return [c for c in self.consumers if c.running]

    def shards(self, consumer: InProcessConsumer | None = None) -> cpb_grpc.ShardStub:
        """A Shard API stub of `consumer` (default: the first live one)."""
        target = consumer or self.live[0]
        return target.shard_stub()

    # -- journals and shards --------------------------------------------------

    async def create_journals(self, *names: str, content_type: str = JSON_LINES,
                              labels: Labels = (), replication: int = 1) -> None:
        """Create journals (labelled with `content_type`) and wait until each is served."""
        all_labels = ((CONTENT_TYPE_LABEL, content_type), *labels)
        specs = [journal_spec(n, labels=tuple(all_labels), replication=replication,
                              length=16 << 20) for n in names]
        await self.apply_journals(specs)

    async def apply_journals(self, specs: Sequence[pb.JournalSpec]) -> None:
        """Upsert full JournalSpecs and wait until each is served."""
        changes = [pb.ApplyRequest.Change(upsert=s, expect_mod_revision=-1) for s in specs]
        await apply_journals(journal_stub(self.broker_endpoint), pb.ApplyRequest(changes=changes))
        for spec in specs:
            await self.write_head(spec.name)

    async def create_recovery_logs(self, *names: str, replication: int = 1) -> None:
        await self.create_journals(*names, content_type=RECOVERY_LOG_TYPE,
                                   replication=replication)

    @staticmethod
    def shard_spec(shard: str, sources: Sequence[str], *,
                   recovery_log_prefix: str = "recovery-logs", hint_prefix: str = "/hints",
                   hint_backups: int = 2, hot_standbys: int = 0,
                   max_txn_duration_s: float = 1.0, min_txn_duration_s: float = 0.0,
                   labels: Labels = ()) -> cpb.ShardSpec:
        """A valid ShardSpec with test-friendly defaults (a recovery log, short txns)."""
        spec = cpb.ShardSpec(id=shard, recovery_log_prefix=recovery_log_prefix,
                             hint_prefix=hint_prefix if recovery_log_prefix else "",
                             hint_backups=hint_backups if recovery_log_prefix else 0,
                             hot_standbys=hot_standbys,
                             sources=[cpb.ShardSpec.Source(journal=j) for j in sorted(sources)])
        spec.max_txn_duration.CopyFrom(from_seconds(max_txn_duration_s))
        spec.min_txn_duration.CopyFrom(from_seconds(min_txn_duration_s))
        for name, value in sorted(labels):
            spec.labels.labels.add(name=name, value=value)
        return spec

    async def create_shards(self, *specs: cpb.ShardSpec, create_logs: bool = True,
                            log_replication: int = 1) -> None:
        """Apply shards, first creating their recovery logs (with `create_logs`)."""
        logs = [recovery_log(s) for s in specs if recovery_log(s)]
        if create_logs and logs:
            await self.create_recovery_logs(*logs, replication=log_replication)
        changes = [cpb.ApplyRequest.Change(upsert=s, expect_mod_revision=-1) for s in specs]
        resp = await self.shards().Apply(cpb.ApplyRequest(changes=changes))
        if resp.status != cpb.OK:
            raise HarnessError(f"applying shards: {cpb.Status.Name(resp.status)}")

    # -- messages -------------------------------------------------------------

    async def publish(self, mapping: Mapping, *messages: Message) -> int:
        """Publish committed messages and wait for their appends; the end offset of the last."""
        appends = [self.publisher.publish_committed(mapping, m) for m in messages]
        done = await asyncio.gather(*appends)
        return int(done[-1].end) if done else 0

    async def write_head(self, journal: str) -> int:
        """The journal's write head (waiting until it is served)."""
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                return await fetch_write_head(journal_stub(self.broker_endpoint), journal)
            except GazetteError as err:  # not served yet: the allocator has not run
                if time.monotonic() > deadline:
                    raise HarnessError(f"{journal} is not served: {err}") from err
                await asyncio.sleep(0.05)

    async def committed_messages(self, journal: str,
                                 new_message: Callable[[pb.JournalSpec], Message],
                                 offset: int = 0) -> list[Message]:
        """The committed messages (ACKs skipped) of `journal` from `offset` to its write head.

        Bare messages, in journal order; `gazette_core.message.read_committed`
        (with `block=False`) yields the same as Envelopes, with their offsets.
        """
        return [env.message async for env in read_committed(
            self.journals, journal, new_message, offset=offset, block=False)]

    async def read_committed(self, journal: str, new_message: Callable[[pb.JournalSpec], Message],
                             offset: int = 0) -> list[Message]:
        """Deprecated: `committed_messages`, under the name that elsewhere yields Envelopes."""
        warnings.warn("ConsumerHarness.read_committed is deprecated: it returns bare messages, "
                      "while gazette_core.message.committed.read_committed yields Envelopes; "
                      "use ConsumerHarness.committed_messages", DeprecationWarning, stacklevel=2)
        return await self.committed_messages(journal, new_message, offset)

    # -- shards at work -------------------------------------------------------

    async def stat(self, shard: str, read_through: dict[str, int] | None = None,
                   consumer: InProcessConsumer | None = None) -> cpb.StatResponse:
        """One Stat of `shard` (proxied to its primary), waiting for `read_through`."""
        req = cpb.StatRequest(shard=shard, read_through=read_through or {})
        resp: cpb.StatResponse = await self.shards(consumer).Stat(req, timeout=WAIT_S)
        return resp

    async def wait_consumed(self, shard: str, offsets: dict[str, int] | None = None
                            ) -> dict[str, int]:
        """Block until `shard` committed transactions through `offsets` (default: the
        current write head of each of its sources); its read-through offsets then."""
        if offsets is None:
            spec = await self.spec(shard)
            offsets = {s.journal: await self.write_head(s.journal) for s in spec.sources}
        last = "no answer"
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            try:
                resp = await self.stat(shard, offsets)
            except grpc.aio.AioRpcError as err:
                last = f"{err.code().name}: {err.details()}"
            else:
                if resp.status == cpb.OK:
                    return dict(resp.read_through)
                last = cpb.Status.Name(resp.status)  # e.g. NO_SHARD_PRIMARY while recovering
            await asyncio.sleep(0.05)
        raise HarnessError(f"{shard} did not consume through {offsets}: last {last}")

    async def spec(self, shard: str) -> cpb.ShardSpec:
        return (await self.listed(shard)).spec

    async def listed(self, shard: str) -> cpb.ListResponse.Shard:
        sel = pb.LabelSelector(include=pb.LabelSet(labels=[pb.Label(name="id", value=shard)]))
        resp = await self.shards().List(cpb.ListRequest(selector=sel))
        for entry in resp.shards:
            return entry
        raise HarnessError(f"no shard {shard}")

    async def wait_primary(self, shard: str) -> InProcessConsumer:
        """The consumer whose replica of `shard` is PRIMARY, once one is."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            entry = await self.listed(shard)
            route = entry.route
            if route.primary >= 0 and entry.status[route.primary].code == cpb.ReplicaStatus.PRIMARY:
                member = route.members[route.primary]
                for consumer in self.live:
                    if consumer.suffix == member.suffix:
                        return consumer
            await asyncio.sleep(0.05)
        raise HarnessError(f"{shard} has no PRIMARY replica")

    async def crash(self, shard: str, restart: bool = True) -> InProcessConsumer:
        """Kill the consumer serving `shard` as primary, without a hand-off.

        Its transaction in flight is lost and its Etcd lease is revoked, as
        when a process dies and its lease expires. With `restart`, a new
        consumer takes its place. Returns the crashed consumer.
        """
        victim = await self.wait_primary(shard)
        await victim.crash()
        if restart:
            await self.add_consumer()
        return victim


@asynccontextmanager
async def consumer_harness(app_factory: Callable[[], Any], *, consumers: int = 1,
                           etcd_endpoint: str | None = None, broker_endpoint: str | None = None,
                           directory: Path | None = None, lease_s: int = 5
                           ) -> AsyncIterator[ConsumerHarness]:
    """Start etcd (unless given), a broker (unless given) and `consumers` consumers.

    Everything started here is stopped on exit, and the temporary directory
    (unless `directory` was given) removed.
    """
    async with AsyncExitStack() as stack:
        if directory is None:
            directory = Path(stack.enter_context(tempfile.TemporaryDirectory(
                prefix="gazette-consumer-")))
        if etcd_endpoint is None:
            etcd = await asyncio.to_thread(EtcdServer().start)
            stack.callback(etcd.stop)
            etcd_endpoint = etcd.endpoint
        if broker_endpoint is None:
            (directory / "fragments").mkdir(parents=True, exist_ok=True)
            broker = await stack.enter_async_context(running_broker(broker_config(
                etcd_endpoint, str(directory / "fragments"), etcd_lease=lease_s)))
            broker_endpoint = broker.endpoint
        harness = ConsumerHarness(directory, etcd_endpoint, broker_endpoint, app_factory,
                                  lease_s)
        harness._appender.start()
        stack.push_async_callback(harness._appender.stop)
        try:
            for _ in range(consumers):
                await harness.add_consumer()
            yield harness
        finally:
            # Torn down without hand-offs: a graceful exit waits for shards to move,
            # which the last consumers cannot do. `stop_consumer` is the graceful one.
            for consumer in reversed(harness.consumers):
                await consumer.crash()
