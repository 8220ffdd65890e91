"""A journal's fragments listed up to its write head: what a batch read must see.

ListFragments is answered by the member of the journal's route that the
broker asked picks, from its own index. A member that joined the route lately
knows only its last store listing and its own spool, so what the older members
persisted as it joined stays out of its answer until its next refresh (the
journal's `refresh_interval`). A read planned from that answer would end early,
or jump a hole, and say nothing (docs/design/spark.md, "Listings that reach
the write head").

So the write head is asked first (every acknowledged append lies below it),
then the listing. Where the listing ends short of that head or leaves a hole,
each member of the route is asked directly (`do_not_proxy`) and the fragments
they persisted are merged in (a member that cannot answer is passed over). A
listing that still ends short fails as
unavailable (a hole left is the reader's to judge: content pruned), never a
short read; an empty listing is taken as every fragment pruned. selection.py calls this for
the listings of reads (`to_head`); pruning needs no more than what is listed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gazette_core.broker.client.channel import ClientConfig, journal_stub
from gazette_core.broker.client.journals import fetch_write_head
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import GazetteError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

Listing = list[pb.FragmentsResponse._Fragment]


class ListingShort(GazetteError):
    """No member's listing reaches the write head: content is persisted where none has
    looked yet. Retriable: a later listing (after the members' refresh) reaches it."""

    retriable = True


def falls_short(fragments: Sequence[pb.Fragment], head: int) -> bool:
    """Whether `fragments` (ordered by begin) leave a hole or end before `head`."""
    return has_hole(fragments) or ends_short(fragments, head)


def has_hole(fragments: Sequence[pb.Fragment]) -> bool:
    covered = fragments[0].end if fragments else 0
    for f in fragments[1:]:
        if f.begin > covered:
            return True
        covered = max(covered, f.end)
    return False


def ends_short(fragments: Sequence[pb.Fragment], head: int) -> bool:
    """A listing ending before the head: an empty one does not (every fragment pruned)."""
    return bool(fragments) and max(f.end for f in fragments) < head


def merged(listing: Listing, more: Listing) -> Listing:
    """`listing` with the persisted fragments of `more` it lacks, ordered by begin."""
    seen = {(f.spec.begin, f.spec.end) for f in listing}
    extra = [f for f in more if f.spec.mod_time > 0 and f.spec.backing_store
             and (f.spec.begin, f.spec.end) not in seen]
    return sorted([*listing, *extra], key=lambda f: (f.spec.begin, -f.spec.end))


async def listing_to_head(stub: JournalAsyncStub, journal: str, route: pb.Route,
                          listed: Callable[[JournalAsyncStub, bool], Awaitable[Listing]],
                          client: ClientConfig | None = None) -> Listing:
    """`journal`'s fragments through `stub` (`listed(stub, do_not_proxy)`), completed from
    `route`'s members
    where they fall short of the write head read before them.

    A hole the members cannot fill is left to the reader (content pruned); a listing that
    still ends short of the head raises ListingShort.
    """
    head = await fetch_write_head(stub, journal)
    listing = await listed(stub, False)
    for endpoint in route.endpoints:
        if not falls_short([f.spec for f in listing], head):
            return listing
        try:
            own = await listed(journal_stub(endpoint, client), True)
        except GazetteError:
            # A member not serving the journal yet (its view of the route lags), or gone:
            # it has nothing to add, and the check below still refuses a short listing.
            continue
        listing = merged(listing, own)
    if ends_short([f.spec for f in listing], head):
        end = max(f.spec.end for f in listing)
        raise ListingShort(
            f"listing of {journal} ends at offset {end} but its write head is {head}: a "
            "broker that joined its route lately has not yet listed what the others "
            "persisted; try again once the brokers refresh their listings")
    return listing
