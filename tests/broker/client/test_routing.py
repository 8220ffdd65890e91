"""Router: the route cache and dispatch rules, their wiring into the clients, and
routing against three real brokers (direct calls and fall-back after a failure)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from pathlib import Path

import aetcd
import pytest
import pytest_asyncio

from gazette_core.broker.client.append_service import AppendService
from gazette_core.broker.client.appender import append, append_retrying
from gazette_core.broker.client.channel import close_channels, journal_stub
from gazette_core.broker.client.journals import apply_journals, list_journals
from gazette_core.broker.client.reader import Reader
from gazette_core.broker.client.retry_reader import RetryReader
from gazette_core.broker.client.routing import Router, Target, target_for
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.service import Broker
from gazette_core.errors import AppendError, OffsetNotYetAvailable, UnavailableError
from gazette_core.testing.broker import broker_config, journal_spec, running_broker
from gazette_core.testing.etcd import EtcdServer
from tests.broker.client.fake_broker import FakeBroker

DEFAULT = "http://default:8080"
A, B, C = "http://a:8080", "http://b:8080", "http://c:8080"


def member(zone: str, suffix: str) -> pb.ProcessSpec.ID:
    return pb.ProcessSpec.ID(zone=zone, suffix=suffix)


def route(primary: int = 1, endpoints: tuple[str, ...] = (A, B, C)) -> pb.Route:
    """Members east/a, east/b, west/c (sorted, as brokers send them)."""
    members = [member("east", "bro-a"), member("east", "bro-b"), member("west", "bro-c")]
    return pb.Route(members=members, primary=primary, endpoints=endpoints)


def header(r: pb.Route, revision: int = 10) -> pb.Header:
    return pb.Header(process_id=member("east", "bro-a"), route=r,
                     etcd=pb.Header.Etcd(cluster_id=1, member_id=1, revision=revision,
                                         raft_term=1))


@pytest_asyncio.fixture(loop_scope="session", autouse=True)
async def no_cached_channels() -> AsyncIterator[None]:
    """Start and end every test with no shared channel cached.

    Channels are cached per loop and address, and these tests stop brokers
    whose ports the OS may hand to a later test's broker: a channel inherited
    from a stopped one would still be backing off and fail at once.
    """
    await close_channels()
    yield
    await close_channels()


def dialed(address: str) -> str:
    """A stand-in stub: just the address that would have been dialed."""
    return address


class RecordingRouter(Router):
    """A Router recording invalidations; by default its stubs are `dialed` addresses."""

    def __init__(self, default: str = DEFAULT, *, connect: Callable[[str], object] = dialed,
                 **kwargs: object) -> None:
        super().__init__(default, connect=connect, **kwargs)  # type: ignore[arg-type]
        self.forgotten: list[str] = []

    def invalidate(self, journal: str) -> None:
        self.forgotten.append(journal)
        super().invalidate(journal)


def address(router: Router, journal: str, *, primary: bool) -> str:
    target = router.target(journal, primary=primary)
    assert target.routed == (target.stub != DEFAULT)
    return str(target.stub)


# Cache and dispatch rules --------------------------------------------------


def test_unknown_journals_go_to_the_default_broker() -> None:
    router = RecordingRouter()
    target = router.target("a/j", primary=True)
    assert (target.stub, target.address, target.routed) == (DEFAULT, "", False)
    assert router.route("a/j") is None


def test_a_default_stub_serves_unknown_journals_as_is() -> None:
    stub = object()
    router = Router(stub, connect=dialed)  # type: ignore[arg-type]
    assert router.target("a/j", primary=False).stub is stub
    router.observe("a/j", header(route(primary=0)))
    assert router.target("a/j", primary=False).stub == A


def test_appends_go_to_the_primary_and_reads_prefer_the_zone_then_the_primary() -> None:
    router = RecordingRouter()
    router.observe("a/j", header(route(primary=1)))
    assert address(router, "a/j", primary=True) == B
    assert address(router, "a/j", primary=False) == B  # no zone: the primary
    router.zone = "west"
    assert address(router, "a/j", primary=False) == C  # a member in our zone
    router.zone = "east"
    assert address(router, "a/j", primary=False) == B  # the primary is in our zone too
    router.observe("a/j", header(route(primary=2), revision=11))
    assert address(router, "a/j", primary=False) == A  # first member of our zone
    router.zone = "north"
    assert address(router, "a/j", primary=False) == C  # none in our zone: the primary
    assert router.route("a/j") == route(primary=2)


def test_without_a_primary_appends_go_to_the_default_and_reads_to_any_member() -> None:
    router = RecordingRouter()
    router.observe("a/j", header(route(primary=-1, endpoints=("", B, C))))
    assert address(router, "a/j", primary=True) == DEFAULT
    assert address(router, "a/j", primary=False) == B
    router.observe("a/j", header(route(primary=0, endpoints=("", B, C)), revision=11))
    assert address(router, "a/j", primary=True) == DEFAULT  # the primary has no endpoint
    assert address(router, "a/j", primary=False) == B


def test_routes_without_endpoints_are_not_remembered_and_newer_ones_replace() -> None:
    router = RecordingRouter()
    router.observe("a/j", header(pb.Route(members=[member("east", "bro-a")], primary=0)))
    assert router.route("a/j") is None
    router.observe("a/j", header(route(primary=0), revision=10))
    router.observe("a/j", header(route(primary=2), revision=9))  # a lagging broker's view
    assert router.route("a/j") == route(primary=0)
    router.observe("a/j", header(route(primary=1), revision=10))
    assert router.route("a/j") == route(primary=1)
    router.observe("a/j", route(primary=2))  # a bare Route (e.g. from List) always replaces
    assert router.route("a/j") == route(primary=2)
    # Newer word that the journal has no members: the remembered route is stale.
    router.observe("a/j", header(pb.Route(primary=-1), revision=12))
    assert router.route("a/j") is None


def test_observed_routes_are_copies() -> None:
    router = RecordingRouter()
    h = header(route(primary=0))
    router.observe("a/j", h)
    h.route.primary = 2
    assert address(router, "a/j", primary=True) == A


def test_metadata_suffix_shares_the_journal_route() -> None:
    router = RecordingRouter()
    router.observe("a/j;meta", header(route(primary=2)))
    assert address(router, "a/j", primary=True) == C
    router.invalidate("a/j;meta")
    assert router.route("a/j") is None


def test_the_cache_keeps_the_most_recently_used_journals() -> None:
    router = RecordingRouter(capacity=2)
    for name in ("a/one", "a/two"):
        router.observe(name, header(route(primary=0)))
    router.target("a/one", primary=True)  # a/two is now the least recently used
    router.observe("a/three", header(route(primary=0)))
    assert [router.route(n) is not None for n in ("a/one", "a/two", "a/three")] == [
        True, False, True]


@pytest.mark.parametrize("status", [
    pb.NOT_JOURNAL_PRIMARY_BROKER, pb.NOT_JOURNAL_BROKER, pb.JOURNAL_NOT_FOUND])
def test_a_routed_broker_disowning_the_journal_drops_its_route(status: int) -> None:
    router = RecordingRouter()
    router.observe("a/j", header(route(primary=0)))
    router.target("a/j", primary=False).answered(status, header(route(primary=2), 20))
    assert (router.forgotten, router.route("a/j")) == (["a/j"], None)


def test_the_default_broker_disowning_the_journal_leaves_the_cache_alone() -> None:
    router = RecordingRouter()
    default = router.target("a/j", primary=True)
    router.observe("a/j", header(route(primary=0)))  # learned meanwhile by another call
    default.answered(pb.JOURNAL_NOT_FOUND, header(pb.Route(primary=-1), 20))
    default.failed(UnavailableError("Append: UNAVAILABLE"))
    assert (router.forgotten, router.route("a/j")) == ([], route(primary=0))


def test_routes_age_out_ttl_after_they_were_learned_once_used() -> None:
    now = [100.0]
    router = RecordingRouter(ttl=60, clock=lambda: now[0])
    router.observe("a/j", header(route(primary=2)))
    now[0] += 61  # aged, but never used: it still serves the call it was learned for
    assert address(router, "a/j", primary=True) == C
    assert address(router, "a/j", primary=True) == DEFAULT  # used and aged: forgotten
    router.observe("a/j", header(route(primary=0), revision=11))
    now[0] += 60
    assert address(router, "a/j", primary=True) == A  # not older than the ttl yet
    router.observe("a/j", header(route(primary=0), revision=12))  # learned again: renewed
    now[0] += 59
    assert address(router, "a/j", primary=True) == A
    now[0] += 2
    assert router.route("a/j") is None


def test_without_a_ttl_routes_never_age() -> None:
    now = [0.0]
    router = RecordingRouter(clock=lambda: now[0])
    router.observe("a/j", header(route(primary=2)))
    address(router, "a/j", primary=True)
    now[0] += 10 ** 9
    assert address(router, "a/j", primary=True) == C


def test_the_default_broker_refusing_an_unproxied_call_teaches_the_route() -> None:
    """A do_not_proxy read the default broker is no member for: it names the members."""
    router = RecordingRouter()
    router.target("a/j", primary=False).answered(pb.NOT_JOURNAL_BROKER,
                                                 header(route(primary=2), 20))
    assert (router.forgotten, address(router, "a/j", primary=False)) == ([], C)


def test_other_statuses_teach_the_route_and_failures_forget_it() -> None:
    router = RecordingRouter()
    router.target("a/j", primary=True).answered(pb.WRONG_APPEND_OFFSET, header(route(1)))
    assert router.route("a/j") == route(1)
    router.target("a/j", primary=True).failed(UnavailableError("Append: UNAVAILABLE"))
    assert (router.forgotten, router.route("a/j")) == (["a/j"], None)


def test_a_plain_stub_is_used_as_is() -> None:
    stub = object()
    target = target_for(stub, "a/j", primary=True)  # type: ignore[arg-type]
    assert target == Target(stub, "a/j")  # type: ignore[arg-type]
    target.answered(pb.JOURNAL_NOT_FOUND, None)  # nothing to tell
    target.failed(UnavailableError("x"))


# Wiring into the clients, against fake brokers -----------------------------


def point_at(peer: FakeBroker, *fakes: FakeBroker) -> pb.Route:
    """Make every fake announce a route whose only member and primary is `peer`."""
    r = pb.Route(members=[member("local", "peer-broker")], primary=0,
                 endpoints=[f"http://{peer.address}"])
    for fake in fakes:
        fake.route = r
    return r


async def test_append_learns_the_primary_and_goes_there_next(
    broker: FakeBroker, peer: FakeBroker
) -> None:
    for fake in (broker, peer):
        fake.add_journal("a/j")
    r = point_at(peer, broker, peer)
    router = Router(broker.address)
    await append(router, "a/j", b"one")
    assert router.route("a/j") == r
    await append(router, "a/j", b"two")
    assert (len(broker.append_requests), len(peer.append_requests)) == (1, 1)
    assert bytes(peer.journals["a/j"].content) == b"two"


async def test_append_refused_by_the_routed_broker_goes_back_to_the_default(
    broker: FakeBroker, peer: FakeBroker
) -> None:
    broker.add_journal("a/j")  # the peer doesn't know the journal
    point_at(peer, broker, peer)
    router = Router(broker.address)
    await append(router, "a/j", b"one")
    with pytest.raises(AppendError) as info:
        await append(router, "a/j", b"two")
    assert (info.value.status, router.route("a/j")) == (pb.JOURNAL_NOT_FOUND, None)
    await append(router, "a/j", b"three")
    assert bytes(broker.journals["a/j"].content) == b"onethree"
    assert (len(broker.append_requests), len(peer.append_requests)) == (2, 1)


async def test_append_retrying_falls_back_when_the_routed_broker_is_gone(
    broker: FakeBroker, peer: FakeBroker
) -> None:
    broker.add_journal("a/j")
    point_at(peer, broker)
    router = Router(broker.address)
    await append(router, "a/j", b"one")
    await peer.stop()
    with pytest.raises(UnavailableError):
        await append(router, "a/j", b"lost")
    assert router.route("a/j") is None
    router.observe("a/j", broker.journal_header())  # remember the dead peer again
    resp = await append_retrying(router, "a/j", b"two")
    assert (resp.commit.begin, resp.commit.end) == (3, 6)
    assert len(broker.append_requests) == 2


async def test_append_service_batches_go_to_the_learned_primary(
    broker: FakeBroker, peer: FakeBroker
) -> None:
    for fake in (broker, peer):
        fake.add_journal("a/j")
    point_at(peer, broker, peer)
    async with AppendService(Router(broker.address)) as service:
        first = await service.write("a/j", b"one")
        second = await service.write("a/j", b"two")
    assert (first.begin, second.begin) == (0, 0)  # each fake holds one of them
    assert bytes(broker.journals["a/j"].content) == b"one"
    assert bytes(peer.journals["a/j"].content) == b"two"


async def read_to_head(reader: Reader) -> bytes:
    out = bytearray()
    with pytest.raises(OffsetNotYetAvailable):
        async for chunk in reader:
            out += chunk
    return bytes(out)


async def test_reader_learns_a_member_and_reads_there_next(
    broker: FakeBroker, peer: FakeBroker
) -> None:
    for fake in (broker, peer):
        fake.add_journal("a/j", b"hello\n")
    point_at(peer, broker, peer)
    router = Router(broker.address)
    first = Reader(router, pb.ReadRequest(journal="a/j"))
    assert await read_to_head(first) == b"hello\n"
    second = Reader(router, pb.ReadRequest(journal="a/j"))
    assert await read_to_head(second) == b"hello\n"
    assert first.target is not None and second.target is not None
    assert (first.target.routed, second.target.address) == (False, f"http://{peer.address}")
    assert (len(broker.read_requests), len(peer.read_requests)) == (1, 1)
    assert not peer.read_requests[0].do_not_proxy  # a stale route still gets proxied


async def test_retry_reader_resumes_at_the_default_when_the_routed_read_is_cut(
    broker: FakeBroker, peer: FakeBroker
) -> None:
    data = bytes(i % 251 for i in range(100_000))
    for fake in (broker, peer):
        fake.add_journal("a/j", data)
    r = point_at(peer, broker, peer)
    peer.read_aborts, peer.read_abort_after = 1, 40_000
    router = Router(broker.address)
    router.observe("a/j", r)
    async with RetryReader(router, pb.ReadRequest(journal="a/j")) as reader:
        got = b"".join([chunk async for chunk in reader])
    assert got == data
    assert [req.offset for req in peer.read_requests] == [0]
    assert [req.offset for req in broker.read_requests] == [40_000]


# Three real brokers -------------------------------------------------------


@pytest_asyncio.fixture(loop_scope="session")
async def cluster(etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path
                  ) -> AsyncIterator[list[Broker]]:
    """Three in-process brokers sharing one etcd and one file:// store root."""
    async with AsyncExitStack() as stack:
        brokers = []
        for i in range(3):
            config = broker_config(etcd_server.endpoint, str(tmp_path), id=f"node-{i}")
            brokers.append(await stack.enter_async_context(running_broker(config)))
        yield brokers


def name_selector(journal: str) -> pb.LabelSelector:
    return pb.LabelSelector(include=pb.LabelSet(labels=[pb.Label(name="name", value=journal)]))


async def route_at(broker: Broker, journal: str, accept: Callable[[pb.Route], bool]
                   ) -> pb.Route:
    """The journal's route as `broker` sees it, once `accept` approves of it."""
    for _ in range(500):
        listed = await list_journals(journal_stub(broker.endpoint), name_selector(journal))
        for j in listed.journals:
            if accept(j.route):
                return j.route
        await asyncio.sleep(0.02)
    raise AssertionError(f"{broker.endpoint} never saw an acceptable route of {journal}")


async def create_settled(brokers: list[Broker], spec: pb.JournalSpec) -> pb.Route:
    """Create the journal and return its route once every broker has observed it.

    A broker's view trails etcd, and one that hasn't caught up yet rightly
    answers JOURNAL_NOT_FOUND.
    """
    await apply_journals(journal_stub(brokers[0].endpoint), pb.ApplyRequest(
        changes=[pb.ApplyRequest.Change(upsert=spec)]))

    def complete(r: pb.Route) -> bool:
        return r.primary != -1 and len(r.members) == spec.replication

    routes = [await route_at(b, spec.name, complete) for b in brokers]
    assert all(r == routes[0] for r in routes), routes
    return routes[0]


def by_id(brokers: list[Broker], process_id: pb.ProcessSpec.ID) -> Broker:
    return next(b for b in brokers if b.process_id == process_id)


async def test_router_calls_the_journal_brokers_directly(cluster: list[Broker]) -> None:
    r = await create_settled(cluster, journal_spec("route/direct", replication=1))
    primary = by_id(cluster, r.members[r.primary])
    outsider = next(b for b in cluster if b.process_id not in r.members)
    router = Router(outsider.endpoint)
    assert not router.target("route/direct", primary=True).routed

    first = await append(router, "route/direct", b"one\n")  # proxied by the outsider
    assert first.header.process_id == primary.process_id
    assert router.route("route/direct") == r
    assert router.target("route/direct", primary=True).address == primary.endpoint

    # With the default broker gone, only calls made directly can still succeed.
    await outsider.stop(drain_timeout=0)
    second = await append(router, "route/direct", b"two\n")
    assert (second.header.process_id, second.commit.begin, second.commit.end) == (
        primary.process_id, 4, 8)
    async with AppendService(router) as service:
        third = await service.write("route/direct", b"three\n")
    assert (third.begin, third.end) == (8, 14)
    reader = Reader(router, pb.ReadRequest(journal="route/direct"))
    assert await read_to_head(reader) == b"one\ntwo\nthree\n"
    assert reader.header is not None and reader.header.process_id in r.members
    assert reader.target is not None and reader.target.address == primary.endpoint


async def test_router_falls_back_to_the_default_broker_after_a_failure(
    cluster: list[Broker]
) -> None:
    # Two replicas, so the journal's content outlives the primary stopped below.
    r = await create_settled(cluster, journal_spec("route/fail", replication=2))
    primary = by_id(cluster, r.members[r.primary])
    default = next(b for b in cluster if b.process_id not in r.members)
    appends = RecordingRouter(default.endpoint, connect=journal_stub)
    reads = RecordingRouter(default.endpoint, connect=journal_stub)
    first = await append(appends, "route/fail", b"before\n")
    reads.observe("route/fail", first.header)
    assert appends.route("route/fail") == reads.route("route/fail") == r
    assert reads.target("route/fail", primary=False).address == primary.endpoint

    await primary.stop(drain_timeout=0)  # gone at once: the lease is revoked
    assert appends.route("route/fail") == reads.route("route/fail") == r
    # Wait until the default broker knows the new route, so that the retry
    # through it is answered rather than proxied to the broker just stopped.
    moved = await route_at(default, "route/fail", lambda new: new.primary != -1 and len(
        new.members) == 2 and primary.process_id not in new.members)

    resp = await append_retrying(appends, "route/fail", b"after\n")
    assert (resp.status, resp.commit.begin, resp.commit.end) == (pb.OK, 7, 13)
    assert resp.header.process_id == moved.members[moved.primary]
    assert list(resp.header.route.members) == list(moved.members)
    assert (appends.forgotten, appends.route("route/fail")) == (["route/fail"], resp.header.route)

    request = pb.ReadRequest(journal="route/fail", block=True, end_offset=13)
    async with RetryReader(reads, request) as reader:
        got = await asyncio.wait_for(_collect(reader), 30)
    assert got == b"before\nafter\n"
    assert reader.header is not None and reader.header.process_id in moved.members
    assert reads.forgotten == ["route/fail"]
    assert list(reads.route("route/fail").members) == list(moved.members)  # type: ignore[union-attr]


async def _collect(reader: RetryReader) -> bytes:
    return b"".join([chunk async for chunk in reader])
