"""Go's route cache (`--broker.cache.size`, `--broker.cache.ttl`) and `--zone`, for gazctl.

With a cache size above 0, `journals read`, `journals append` and `shards
recover` send each read and append straight to a broker of the journal's
route (appends to the primary, reads to a member in `--zone` when there is
one, else the primary) through a `Router` that keeps the routes of that many
journals, each for `--broker.cache.ttl` after it was last learned. Routes
come from the journals' listing and from every response. With 0, Go's
default, every call goes to the broker at `--broker.address`, which forwards
it; reads that fetch fragments themselves (a known file root) and `shards
recover` route even so, since a broker may refuse to forward them: they get
a cache of the default size.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from gazctl.connection import setting
from gazctl.timeflags import parse_duration
from gazctl.usage import UsageError
from gazette_core.broker.client.routing import DEFAULT_CAPACITY, JournalClient, Router
from gazette_core.broker.protocol import protocol_pb2 as pb

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

log = logging.getLogger("gazctl")


def cache_size() -> int:
    """--broker.cache.size; 0 or less: no route cache."""
    text, source = setting("broker_cache_size")
    try:
        return int(text)
    except ValueError:
        raise UsageError("--broker.cache.size", f"expected a number of journals, got {text!r} "
                                                f"(from {source})") from None


def journal_client(stub: JournalAsyncStub, listed: Iterable[pb.ListResponse.Journal] = (),
                   *, needed: bool = False) -> JournalClient:
    """`stub`, or a Router over it when the route cache is on or the caller `needed` one.

    The routes of `listed` journals are known from the start.
    """
    size = cache_size()
    if size <= 0 and not needed:
        return stub
    ttl = parse_duration(setting("broker_cache_ttl")[0], "--broker.cache.ttl")
    zone = setting("zone")[0]
    capacity = size if size > 0 else DEFAULT_CAPACITY
    router = Router(stub, zone=zone, capacity=capacity, ttl=ttl)
    log.debug("routing reads and appends through a cache of %d journal routes kept %gs, "
              "reads preferring zone %r", capacity, ttl, zone)
    learn(router, listed)
    return router


def learn(client: JournalClient, listed: Iterable[pb.ListResponse.Journal]) -> None:
    """Teach a Router the routes of `listed` journals (a stub needs none)."""
    if isinstance(client, Router):
        for journal in listed:
            client.observe(journal.spec.name, journal.route)
