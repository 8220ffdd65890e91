"""Client-side routing: send each call straight to a broker of the journal's Route.

Any broker accepts any call and forwards it to the primary (appends) or a
member (reads), which costs an extra hop and, across zones, extra traffic.
Every response header carries the journal's current Route, so a `Router`
remembers the latest one per journal and dispatches the next call to the
right broker directly. It knows nothing at first and falls back to its
default broker, and it forgets a route as soon as a call along it fails, so
the default broker (which always knows the way) is asked again. A call the
default broker may not forward (`do_not_proxy`) it refuses with
NOT_JOURNAL_BROKER and the current route, which the Router then remembers.
With a `ttl`, a route also ages out that long after it was last learned,
once it was used: a route learned from a refusal always serves the retry it is for.

Clients (`append`, `Reader`, `RetryReader`, `AppendService`) accept either a
plain stub, which keeps every call on that broker, or a Router.

The default broker may be an address listing several endpoints separated by
commas (or a stub over one, `journal_stub("http://b1:8080,http://b2:8080")`):
its calls then go to a live one and move on when it dies (failover.py).
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from gazette_core.broker.client.channel import default_address, journal_stub
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.names_ext import strip_meta
from gazette_core.errors import GazetteError

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

DEFAULT_CAPACITY = 4096
log = logging.getLogger(__name__)

# Statuses by which a broker says it is the wrong one to ask: our route is stale.
ROUTING_FAILURES = frozenset(
    {pb.NOT_JOURNAL_PRIMARY_BROKER, pb.NOT_JOURNAL_BROKER, pb.JOURNAL_NOT_FOUND}
)


@dataclass(slots=True)
class _Known:
    route: pb.Route
    revision: int  # Etcd revision the route was observed at; 0 if unknown.
    learned: float = 0.0  # when, by the router's clock
    used: bool = False  # whether a call was dispatched along it since


@dataclass(frozen=True, slots=True)
class Target:
    """Where one call goes, and whom to tell how it went.

    `address` is the routed broker's endpoint, or "" for the default broker.
    """

    stub: JournalAsyncStub
    journal: str
    address: str = ""
    router: Router | None = None

    @property
    def routed(self) -> bool:
        return bool(self.address)

    def answered(self, status: int, header: pb.Header | None) -> None:
        """Feed a response's status and header (if it has one) back to the router."""
        if self.router is not None:
            self.router.answered(self, status, header)

    def failed(self, error: GazetteError) -> None:
        """Tell the router the call itself failed (no status came back)."""
        if self.router is not None:
            self.router.failed(self, error)


class Router:
    """A bounded cache of journal Routes, and the dispatch of calls along them.

    `default` (an endpoint URL, a comma-separated list of them, or a stub)
    serves calls whose route is unknown. Reads prefer a member in `zone` when
    one is given. `ttl` (seconds; 0 for never) ages routes out, measured by
    `clock`. A `capacity` of 0 remembers nothing: every call goes to the default.
    """

    def __init__(
        self,
        default: str | JournalAsyncStub | None = None,
        *,
        zone: str = "",
        capacity: int = DEFAULT_CAPACITY,
        ttl: float = 0.0,
        connect: Callable[[str], JournalAsyncStub] = journal_stub,
        clock: Callable[[], float] = time.monotonic,
        direct_reads: bool = False,
        file_root: str | None = None,
    ) -> None:
        self._default = default if default is not None else default_address()
        # Whether RetryReaders through this router read persisted fragments straight from
        # their stores (do_not_proxy), file:// ones under `file_root`.
        self.direct_reads = direct_reads
        self.file_root = file_root
        self.zone = zone
        self._capacity = capacity
        self._ttl, self._clock = ttl, clock
        # Stubs are made per call rather than cached: channel.dial already
        # shares channels per event loop and replaces closed ones.
        self._connect = connect
        self._routes: OrderedDict[str, _Known] = OrderedDict()

    def observe(self, journal: str, source: pb.Header | pb.Route) -> None:
        """Remember the journal's Route from a response header (or a Route, e.g. from List).

        A header older (by Etcd revision) than the one already remembered is
        ignored, so answers from a lagging broker don't undo newer knowledge.
        A bare Route has no revision and always replaces.
        """
        key = _key(journal)
        if isinstance(source, pb.Header):
            route, revision = source.route, source.etcd.revision
        else:
            route, revision = source, 0
        known = self._routes.get(key)
        if known is not None and revision and revision < known.revision:
            return
        if not _usable(route):
            # Newer knowledge that there is nowhere to go: the old route is stale.
            self._routes.pop(key, None)
            return
        self._routes[key] = _Known(_copy(route), revision, self._clock())
        self._routes.move_to_end(key)
        while len(self._routes) > self._capacity:
            self._routes.popitem(last=False)

    def invalidate(self, journal: str) -> None:
        """Forget the journal's route: its next call goes to the default broker."""
        self._routes.pop(_key(journal), None)

    def route(self, journal: str) -> pb.Route | None:
        """The remembered Route of `journal`, if any (the cached message: do not modify it)."""
        known = self._fresh(_key(journal))
        return known.route if known is not None else None

    def target(self, journal: str, *, primary: bool) -> Target:
        """Where to send a call: the primary (appends) or a member (reads), else the default."""
        key = _key(journal)
        known = self._fresh(key)
        if known is not None:
            self._routes.move_to_end(key)  # Recently used: keep it over idle journals.
            index = _pick(known.route, self.zone, primary)
            if index >= 0:
                known.used = True
                address = str(known.route.endpoints[index])
                log.debug("%s of %s goes to %s", "append" if primary else "read", journal,
                          address)
                return Target(self._connect(address), journal, address, self)
        return Target(self._default_stub(), journal, router=self)

    def _fresh(self, key: str) -> _Known | None:
        """The remembered route of `key`, unless it aged out (and was used) already."""
        known = self._routes.get(key)
        if (known is not None and known.used and self._ttl > 0
                and self._clock() - known.learned > self._ttl):
            del self._routes[key]
            return None
        return known

    def stub_for(self, journal: str, *, primary: bool) -> JournalAsyncStub:
        """The stub `target()` would use (for callers making their own RPCs)."""
        return self.target(journal, primary=primary).stub

    def answered(self, target: Target, status: int, header: pb.Header | None) -> None:
        """Learn from a response: forget a route the broker disowned, else observe."""
        if status in ROUTING_FAILURES:
            if target.routed:
                self.invalidate(target.journal)
            elif status == pb.NOT_JOURNAL_BROKER and header is not None:
                # The default broker refuses a call it may not proxy (do_not_proxy), naming
                # the journal's current route: without it, calls would never reach a member.
                self.observe(target.journal, header)
        elif header is not None:
            self.observe(target.journal, header)

    def failed(self, target: Target, error: GazetteError) -> None:
        """Forget the route after a routed call failed without a status.

        A broker that is gone and one that no longer serves the journal look
        alike from here, and a wrong guess costs just one call via the default.
        """
        if target.routed:
            self.invalidate(target.journal)

    def _default_stub(self) -> JournalAsyncStub:
        if isinstance(self._default, str):
            return self._connect(self._default)
        return self._default


# Either kind of client argument: a stub pins calls to one broker, a Router routes them.
JournalClient: TypeAlias = "JournalAsyncStub | Router"


def target_for(client: JournalClient, journal: str, *, primary: bool) -> Target:
    """The Target of a call made through `client`, whichever kind it is."""
    if isinstance(client, Router):
        return client.target(journal, primary=primary)
    return Target(client, journal)


def _key(journal: str) -> str:
    # Reads may name `journal;meta`; the route is the journal's.
    return strip_meta(journal)


def _usable(route: pb.Route) -> bool:
    """Whether the route names at least one member we could dial."""
    return len(route.endpoints) == len(route.members) and any(route.endpoints)


def _pick(route: pb.Route, zone: str, primary: bool) -> int:
    """Index of the member to call, or -1 to use the default broker."""
    endpoints = route.endpoints
    has_primary = 0 <= route.primary < len(endpoints) and bool(endpoints[route.primary])
    if primary:
        return route.primary if has_primary else -1
    if zone:
        in_zone = [i for i, m in enumerate(route.members) if m.zone == zone and endpoints[i]]
        if in_zone:
            return route.primary if route.primary in in_zone else in_zone[0]
    if has_primary:
        return route.primary
    return next((i for i, e in enumerate(endpoints) if e), -1)


def _copy(route: pb.Route) -> pb.Route:
    copy = pb.Route()
    copy.CopyFrom(route)
    return copy
