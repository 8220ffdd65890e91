"""Consumer processes of a local stack (`gazctl local up --consumers N --app MOD:ATTR`),
for soak tests and benchmarks that SIGKILL them.

Processes, not coroutines: a kill loses everything in flight, and the killed
process's Etcd lease lives on until its TTL runs out, as in production.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import grpc

from gazette_core.broker.client.channel import dial, journal_stub
from gazette_core.broker.client.journals import apply_journals
from gazette_core.broker.client.routing import Router
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.api.lag import measure
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol import consumer_pb2_grpc as cpb_grpc
from gazette_core.local import processes
from gazette_core.local import stack as local_stack


@dataclass
class Takeover:
    """A shard whose primary was killed, and how long until another replica was PRIMARY."""

    shard: str
    seconds: float


class StackConsumers:
    """A local stack with brokers and consumer processes in `directory`."""

    def __init__(self, directory: Path, brokers: int, consumers: int, lease: int,
                 app: str) -> None:
        self.directory = directory
        self.brokers, self.consumers, self.lease, self.app = brokers, consumers, lease, app

    @classmethod
    async def up(cls, directory: Path, *, brokers: int = 1, consumers: int = 1, lease: int = 5,
                 app: str) -> StackConsumers:
        stack = cls(directory, brokers, consumers, lease, app)
        await stack.restart_dead()
        return stack

    @property
    def stack(self) -> local_stack.Stack:
        loaded = local_stack.Stack.load(self.directory)
        assert loaded is not None, f"no stack in {self.directory}"
        return loaded

    @property
    def journals(self) -> Router:
        return Router(journal_stub(self.stack.brokers[0].endpoint))

    def consumer_processes(self) -> list[local_stack.Process]:
        return self.stack.consumers

    def shard_stub(self) -> cpb_grpc.ShardStub:
        """A Shard API stub of the first live consumer that is not stopped (SIGSTOP)."""
        for p in self.consumer_processes():
            if processes.alive(p.pid, p.marker) and not _stopped(p.pid):
                return cpb_grpc.ShardStub(dial(p.endpoint))
        raise AssertionError("no live consumer")

    async def restart_dead(self) -> None:
        """`local up`: start whatever is not running (blocking work, off the loop)."""
        await asyncio.to_thread(local_stack.up, self.directory, brokers=self.brokers,
                                consumers=self.consumers, app=self.app, lease=self.lease,
                                timeout=60, activate=False)

    async def down(self) -> None:
        """`local down`: consumers hand off their shards, brokers persist their spools."""
        await asyncio.to_thread(local_stack.down, self.directory)

    async def kill_all(self) -> None:
        """SIGKILL every process of the stack (a fast teardown), and wait until all are gone."""
        stack = local_stack.Stack.load(self.directory)
        procs = stack.processes if stack else []
        for p in procs:
            if processes.alive(p.pid, p.marker):
                os.kill(p.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while any(processes.alive(p.pid, p.marker) for p in procs):
            assert time.monotonic() < deadline, "stack processes outlived SIGKILL"
            await asyncio.sleep(0.05)

    async def apply_journals(self, specs: list[pb.JournalSpec]) -> None:
        changes = [pb.ApplyRequest.Change(upsert=s, expect_mod_revision=-1) for s in specs]
        await apply_journals(journal_stub(self.stack.brokers[0].endpoint),
                             pb.ApplyRequest(changes=changes))

    async def apply_shards(self, specs: list[cpb.ShardSpec]) -> None:
        changes = [cpb.ApplyRequest.Change(upsert=s, expect_mod_revision=-1) for s in specs]
        resp = await self.shard_stub().Apply(cpb.ApplyRequest(changes=changes), timeout=30)
        assert resp.status == cpb.OK, cpb.Status.Name(resp.status)

    async def list_shards(self) -> list[cpb.ListResponse.Shard]:
        """Every shard with its route and statuses (asking live consumers in turn)."""
        last: Exception | None = None
        for _ in range(3):
            try:
                resp = await self.shard_stub().List(cpb.ListRequest(), timeout=10)
                return list(resp.shards)
            except (grpc.aio.AioRpcError, AssertionError) as err:
                last = err
                await asyncio.sleep(0.1)
        raise AssertionError(f"cannot list shards: {last}")

    async def primaries(self) -> dict[str, str]:
        """Shard -> name of the consumer whose replica is PRIMARY (shards with one)."""
        out = {}
        for entry in await self.list_shards():
            route = entry.route
            if route.primary >= 0 and entry.status[route.primary].code == \
                    cpb.ReplicaStatus.PRIMARY:
                out[entry.spec.id] = route.members[route.primary].suffix
        return out

    async def wait_all_primary(self, shards: list[str], limit: float = 60) -> dict[str, str]:
        deadline = time.monotonic() + limit
        while True:
            primaries = await self.primaries()
            if all(s in primaries for s in shards):
                return primaries
            assert time.monotonic() < deadline, f"no primary yet: {set(shards) - set(primaries)}"
            await asyncio.sleep(0.1)

    def process(self, name: str) -> local_stack.Process:
        return next(p for p in self.consumer_processes() if p.name == name)

    async def kill(self, name: str) -> None:
        """SIGKILL consumer `name` and wait until it is gone."""
        p = self.process(name)
        os.kill(p.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while processes.alive(p.pid, p.marker):
            assert time.monotonic() < deadline, f"{name} outlived SIGKILL"
            await asyncio.sleep(0.02)

    async def takeovers(self, shards: list[str], dead: str, limit: float) -> list[Takeover]:
        """Wait until each of `shards` is PRIMARY on a consumer other than `dead`; the
        time each took, from now. Fails once `limit` seconds pass."""
        start = time.monotonic()
        left, out = set(shards), []
        while left:
            primaries = await self.primaries()
            now = time.monotonic() - start
            for shard in sorted(left):
                if primaries.get(shard, dead) != dead:
                    out.append(Takeover(shard, now))
                    left.discard(shard)
            if left:
                assert now < limit, f"{sorted(left)} not taken over within {limit}s"
                await asyncio.sleep(0.05)
        return out


    async def diagnosis(self, log_lines: int = 15) -> str:
        """Where each shard stands (replicas' statuses, bytes behind each source) and
        the last warnings of every process's log: for the message of a failed check,
        so that a stall names the shard that stopped and what its processes said."""
        out = []
        try:
            listed = cpb.ListResponse(shards=await self.list_shards())
            lags = await measure(self.shard_stub(), journal_stub(self.broker_addresses),
                                 listed)
            for entry in listed.shards:
                codes = [cpb.ReplicaStatus.Code.Name(st.code) for st in entry.status]
                members = [m.suffix for m in entry.route.members]
                behind = lags.known.get(entry.spec.id, lags.unknown.get(entry.spec.id))
                out.append(f"{entry.spec.id}: {list(zip(members, codes, strict=False))}, "
                           f"behind {behind}")
        except Exception as exc:  # a diagnosis must not hide the failure it explains
            out.append(f"(shards not listed: {exc!r})")
        for p in self.stack.processes:
            log = self.directory / "logs" / f"{p.name}.log"
            lines = log.read_text(errors="replace").splitlines() if log.exists() else []
            notable = [ln for ln in lines if "WARNING" in ln or "ERROR" in ln or '"warn' in ln]
            out.append(f"-- {p.name} (alive: {processes.alive(p.pid, p.marker)}):")
            out.extend(f"   {ln[:300]}" for ln in notable[-log_lines:])
        return "\n".join(out)

    @property
    def broker_addresses(self) -> str:
        """Every broker's endpoint, as `gazctl local env` exports BROKER_ADDRESS."""
        return ",".join(b.endpoint for b in self.stack.brokers)


def _stopped(pid: int) -> bool:
    """Whether `pid` is stopped by a signal (state T), so it answers nothing."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
    except (OSError, IndexError):
        return False

