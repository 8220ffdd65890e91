"""Helpers for the reliability tests: a local stack with short leases, writers, checks.

Brokers run as real processes of the local stack (`gazette_core.local.stack`)
so they can be SIGKILLed, SIGSTOPped and SIGTERMed. Writers append
self-checking records, each one atomic Append, and keep what each
acknowledgement said; `read_back` then reads the journal back and
`check_acknowledged` holds it against those acknowledgements.

A record is `b"<writer>:<seq>:<sha1 hex of payload>:<payload>\\n"` with a
payload of letters and digits, so a journal's content splits into whole
records and any torn or foreign byte shows up when parsing.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import os
import random
import re
import signal
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

import grpc

from gazette_core.broker.client.appender import append
from gazette_core.broker.client.journals import apply_journals, list_journals
from gazette_core.broker.client.retry_reader import RetryReader
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.errors import GazetteError
from gazette_core.local import processes
from gazette_core.local import stack as local_stack
from gazette_core.testing.broker import journal_spec

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

# Etcd lease TTL of the test brokers: how long a dead broker keeps its journals
# when nobody revokes its lease.
LEASE_S = 4
FRAGMENT_LENGTH = 64 * 1024
RECORD = re.compile(rb"(\d+):(\d+):([0-9a-f]{40}):([A-Za-z0-9]*)\n")
_LETTERS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
# Test channels reconnect quickly to a restarted broker rather than after gRPC's
# default back-off (which grows to two minutes), and each dials on its own: by
# default channels of a process share connections, so a new channel would
# inherit the back-off of another's failed attempts to reach a dead broker.
# (Not "grpc.min_reconnect_backoff_ms": gRPC takes it as the time a connection
# attempt has to finish its handshake, which a loaded machine can exceed.)
CHANNEL_OPTIONS = [("grpc.initial_reconnect_backoff_ms", 100),
                   ("grpc.max_reconnect_backoff_ms", 500),
                   ("grpc.use_local_subchannel_pool", 1)]


# -- the cluster --------------------------------------------------------------


class Cluster:
    """A local stack of three brokers in a temporary directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @property
    def stack(self) -> local_stack.Stack:
        stack = local_stack.Stack.load(self.directory)
        assert stack is not None
        return stack

    @property
    def endpoints(self) -> list[str]:
        return [b.endpoint for b in self.stack.brokers]

    def broker(self, name: str) -> local_stack.Process:
        return next(b for b in self.stack.brokers if b.name == name)

    def name_of(self, member: pb.ProcessSpec.ID) -> str:
        return next(b.name for b in self.stack.brokers
                    if (b.zone, b.name) == (member.zone, member.suffix))

    def pid(self, name: str) -> int:
        """The pid of a broker, as the stack's status reports it (it must be alive)."""
        for entry in self.stack.status():
            if entry["name"] == name:
                assert entry["alive"], entry
                return cast(int, entry["pid"])
        raise AssertionError(f"no broker {name}")

    async def up(self) -> None:
        """Restart whatever is dead (blocking work, so off the event loop)."""
        await asyncio.to_thread(local_stack.up, self.directory, brokers=3, timeout=30,
                                activate=False)

    async def signal(self, name: str, sig: int) -> None:
        """Send `sig` to a broker; SIGKILL and SIGTERM wait until the process is gone."""
        pid = self.pid(name)
        os.kill(pid, sig)
        if sig == signal.SIGSTOP:
            await _until(lambda: _state(pid) == "T", 5, f"{name} to stop")
        elif sig in (signal.SIGKILL, signal.SIGTERM):
            await _until(lambda: not processes.alive(pid, local_stack.BROKER_MARKER), 60,
                         f"{name} to exit")


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


async def _until(done: Callable[[], bool], limit: float, what: str) -> None:
    deadline = time.monotonic() + limit
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


@asynccontextmanager
async def local_cluster(directory: Path, lease: int = LEASE_S) -> AsyncIterator[Cluster]:
    """Three brokers and etcd as processes; all of them SIGKILLed afterwards."""
    try:
        await asyncio.to_thread(local_stack.up, directory, brokers=3, timeout=30,
                                activate=False, lease=lease)
        cluster = Cluster(directory)
        for b in cluster.stack.brokers:  # the brokers really run with the short lease
            argv = Path(f"/proc/{b.pid}/cmdline").read_bytes().split(b"\0")
            assert argv[argv.index(b"--etcd.lease") + 1] == str(lease).encode(), argv
        yield cluster
    finally:
        stack = local_stack.Stack.load(directory)
        for p in stack.processes if stack else []:
            if processes.alive(p.pid, p.marker):
                os.kill(p.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while stack and any(processes.alive(p.pid, p.marker) for p in stack.processes):
            assert time.monotonic() < deadline, "stack processes outlived SIGKILL"
            time.sleep(0.05)


def channel_stub(endpoint: str) -> tuple[grpc.aio.Channel, JournalAsyncStub]:
    """A stub on a private channel (the caller closes it) with fast reconnects."""
    channel = grpc.aio.insecure_channel(endpoint.split("://", 1)[-1], options=CHANNEL_OPTIONS)
    return channel, cast("JournalAsyncStub", pb_grpc.JournalStub(channel))


async def create_journal(cluster: Cluster, name: str, replication: int) -> pb.Route:
    """Create a journal (64 KiB fragments, file:/// store) and wait until fully assigned."""
    channel, stub = channel_stub(cluster.endpoints[0])
    try:
        spec = journal_spec(name, replication=replication, length=FRAGMENT_LENGTH)
        await apply_journals(stub, pb.ApplyRequest(changes=[pb.ApplyRequest.Change(upsert=spec)]))
        return await full_route(stub, name, replication)
    finally:
        await channel.close()


async def cluster_route(cluster: Cluster, journal: str, members: int) -> pb.Route:
    """The journal's route, asked of the cluster's first broker, once it is full."""
    channel, stub = channel_stub(cluster.endpoints[0])
    try:
        return await full_route(stub, journal, members)
    finally:
        await channel.close()


async def full_route(stub: JournalAsyncStub, journal: str, members: int,
                     limit: float = 30) -> pb.Route:
    """The journal's route once it has `members` members and a primary."""
    sel = pb.LabelSelector(include=pb.LabelSet(labels=[pb.Label(name="name", value=journal)]))
    deadline = time.monotonic() + limit
    while True:
        try:
            for j in (await list_journals(stub, sel)).journals:
                if j.route.primary != -1 and len(j.route.members) == members:
                    return j.route
        except GazetteError:
            pass  # the broker asked may be restarting
        assert time.monotonic() < deadline, f"{journal} never had {members} members"
        await asyncio.sleep(0.05)


# -- records and writers ----------------------------------------------------------


def record(writer: int, seq: int, payload: bytes) -> bytes:
    digest = hashlib.sha1(payload).hexdigest().encode()
    return b"%d:%d:%s:%s\n" % (writer, seq, digest, payload)


def random_payload(rng: random.Random, low: int = 10, high: int = 4096) -> bytes:
    return bytes(rng.choices(_LETTERS, k=rng.randint(low, high)))


@dataclass(frozen=True)
class Ack:
    """One acknowledged append, as its AppendResponse described it."""

    writer: int
    seq: int
    data: bytes = field(repr=False)
    begin: int
    end: int
    sum: pb.SHA1Sum = field(repr=False)
    route_members: int
    started: float  # monotonic time the acknowledged attempt began
    acked: float  # monotonic time its response arrived


def ack_of(writer: int, seq: int, data: bytes, resp: pb.AppendResponse, started: float) -> Ack:
    """The Ack of record `writer`:`seq` from its AppendResponse, received just now."""
    return Ack(writer, seq, data, resp.commit.begin, resp.commit.end, resp.commit.sum,
               len(resp.header.route.members), started, asyncio.get_running_loop().time())


async def attempt(endpoint: str, journal: str, writer: int, seq: int, timeout: float
                  ) -> Ack:
    """One append of record `writer`:`seq` through `endpoint`; raises if not acknowledged."""
    data = record(writer, seq, random_payload(random.Random()))
    channel, stub = channel_stub(endpoint)
    started = asyncio.get_running_loop().time()
    try:
        return ack_of(writer, seq, data, await append(stub, journal, data, timeout=timeout),
                      started)
    finally:
        await channel.close()


@dataclass
class Writer:
    """Appends records (one Append each) until stopped, retrying each until acknowledged.

    It starts at broker `index` and moves to the next broker after a failure.
    """

    index: int
    endpoints: list[str]
    journal: str
    attempt_timeout: float
    rng: random.Random
    acks: list[Ack] = field(default_factory=list)
    failures: list[tuple[float, str]] = field(default_factory=list)
    in_flight_since: float | None = None

    async def run(self, stop: asyncio.Event) -> None:
        chans = [channel_stub(e) for e in self.endpoints]
        loop = asyncio.get_running_loop()
        target, seq = self.index % len(chans), 0
        try:
            while not stop.is_set():
                data = record(self.index, seq, random_payload(self.rng))
                while not stop.is_set():
                    started = self.in_flight_since = loop.time()
                    try:
                        resp = await append(chans[target][1], self.journal, data,
                                            timeout=self.attempt_timeout)
                    except GazetteError as exc:
                        self.failures.append((started, f"{type(exc).__name__}: {exc}"))
                        target = (target + 1) % len(chans)
                        await asyncio.sleep(0.05)
                        continue
                    finally:
                        self.in_flight_since = None
                    self.acks.append(ack_of(self.index, seq, data, resp, started))
                    seq += 1
                    break
        finally:
            for channel, _ in chans:
                await channel.close()


def resumed_at(writer: Writer, since: float) -> float | None:
    """When the writer's first append begun at or after `since` was acknowledged."""
    times = [a.acked for a in writer.acks if a.started >= since]
    return min(times) if times else None


# -- reading back ---------------------------------------------------------------


@dataclass
class Readback:
    """The journal as read back: contiguous ranges of content and the records in them."""

    ranges: list[tuple[int, bytes]]  # (begin, content), ordered and disjoint
    records: dict[tuple[int, int], list[int]]  # (writer, seq) -> offsets it was found at
    write_head: int

    def at(self, begin: int, end: int) -> bytes | None:
        for start, content in self.ranges:
            if start <= begin and end <= start + len(content):
                return content[begin - start:end - start]
        return None

    def holes(self) -> list[tuple[int, int]]:
        out, head = [], 0
        for start, content in self.ranges:
            if start > head:
                out.append((head, start))
            head = start + len(content)
        if head < self.write_head:
            out.append((head, self.write_head))
        return out


def parse_records(begin: int, content: bytes) -> list[tuple[int, int, int]]:
    """(offset, writer, seq) of each record; fails on anything but whole, intact records."""
    out, pos = [], 0
    while pos < len(content):
        match = RECORD.match(content, pos)
        assert match, (f"torn or foreign content at offset {begin + pos}: "
                       f"{content[pos:pos + 80]!r}")
        writer, seq, digest, payload = match.groups()
        assert hashlib.sha1(payload).hexdigest().encode() == digest, (
            f"record {writer!r}:{seq!r} at offset {begin + pos} has a wrong checksum")
        out.append((begin + pos, int(writer), int(seq)))
        pos = match.end()
    return out


async def _covered(stub: JournalAsyncStub, journal: str) -> list[tuple[int, int]]:
    """Offset ranges of the fragments a broker indexes (persisted or in its spools)."""
    resp = await stub.ListFragments(pb.FragmentsRequest(journal=journal), timeout=30)
    assert resp.status == pb.OK, resp
    return [(f.spec.begin, f.spec.end) for f in resp.fragments]


def _union(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for begin, end in sorted(s for s in spans if s[1] > s[0]):
        if merged and begin <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((begin, end))
    return merged


async def _read_range(stub: JournalAsyncStub, journal: str, begin: int, end: int) -> bytes:
    out = bytearray()
    req = pb.ReadRequest(journal=journal, offset=begin, end_offset=end, block=False)
    async with RetryReader(stub, req) as reader:
        async for chunk in reader:
            out += chunk
    return bytes(out)


async def read_back(endpoints: list[str], journal: str) -> Readback:
    """Read everything any broker can serve of `journal`, parsing it into records.

    Each broker lists the fragments it indexes; every maximal covered range is
    read from a broker that covers it. A gap between ranges can only hold
    content committed by some replicas and then lost with them (an append
    that was never acknowledged).
    """
    chans = [channel_stub(e) for e in endpoints]
    try:
        per_broker = [await _covered(stub, journal) for _, stub in chans]
        ranges: list[tuple[int, bytes]] = []
        for begin, end in _union([s for spans in per_broker for s in spans]):
            best = max(range(len(chans)), key=lambda i: sum(
                min(e, end) - max(b, begin) for b, e in _union(per_broker[i])
                if b < end and e > begin))
            content = await _read_range(chans[best][1], journal, begin, end)
            assert len(content) == end - begin, (begin, end, len(content), endpoints[best])
            ranges.append((begin, content))
        records: dict[tuple[int, int], list[int]] = {}
        for begin, content in ranges:
            for offset, writer, seq in parse_records(begin, content):
                records.setdefault((writer, seq), []).append(offset)
        head = max((b + len(c) for b, c in ranges), default=0)
        return Readback(ranges, records, head)
    finally:
        for channel, _ in chans:
            await channel.close()


def check_acknowledged(readback: Readback, acks: list[Ack]) -> None:
    """Every acknowledged record sits exactly at its commit offsets, with the commit's sum."""
    for ack in acks:
        assert ack.end - ack.begin == len(ack.data), ack
        assert readback.at(ack.begin, ack.end) == ack.data, (
            f"record {ack.writer}:{ack.seq} acknowledged at [{ack.begin}, {ack.end}) is not "
            f"there; holes: {readback.holes()}")
        digest = hashlib.sha1(ack.data).digest()
        got = ack.sum
        assert (got.part1.to_bytes(8, "big") + got.part2.to_bytes(8, "big")
                + got.part3.to_bytes(4, "big")) == digest, ack
    spans = sorted((a.begin, a.end) for a in acks)
    for (_, end), (begin, _) in itertools.pairwise(spans):
        assert end <= begin, f"acknowledged appends overlap: {spans}"


def lost_bytes(readback: Readback, acks: list[Ack]) -> int:
    """Acknowledged bytes that the journal does not hold as acknowledged."""
    return sum(a.end - a.begin for a in acks if readback.at(a.begin, a.end) != a.data)


def reused_offsets(acks: list[Ack]) -> int:
    """Pairs of acknowledgements whose byte ranges overlap."""
    spans = sorted((a.begin, a.end) for a in acks if a.end > a.begin)
    return sum(1 for (_, end), (begin, _) in itertools.pairwise(spans) if begin < end)
