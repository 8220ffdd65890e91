"""Which journals a Spark job or read works on: the selection listed through a broker.

The prune job, the `gazette` data source's batch and streaming reads, the
export and gazctl all start from the same listing: the journals a label
selector matches, each with all its fragments, suspended journals set aside
(`fetch_selection`, or `list_selection` in one call). Where their fragments
live is checked here too: `file://` stores (every store, with `file_only`)
resolve under the brokers' file root, which must then be known
(`check_file_root`). Messages name the selector and the file root in the
caller's words (`Words`): gazctl's flags, or the `gazette` source's options.
The modules that read, write or prune build on this one; it imports none of
them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from gazette_core.broker.client.backoff import Backoff
from gazette_core.broker.client.channel import ClientConfig, close_channels, journal_stub
from gazette_core.broker.client.journals import DEFAULT_TIMEOUT, list_fragments, list_journals
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.labels_ext import parse_selector
from gazette_core.broker.protocol.suspend_ext import suspend_level
from gazette_core.errors import GazetteError, StatusError, ValidationError
from spark_jobs.head_listing import Listing, listing_to_head

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

FILE_ROOT_ENV = "BROKER_FILE_ROOT"  # the brokers' own variable for --broker.file-root
FILE_ONLY_ENV = "BROKER_FILE_ONLY"
# How an environment variable spells true.
TRUE = ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Words:
    """How the caller names the selector and the file root, for messages."""

    selector: str
    file_root: str


GAZCTL = Words(selector="--selector", file_root="--file-root")
SPARK = Words(selector="option selector", file_root="option fileRoot")


class NothingMatched(GazetteError):
    """The selector matched no journal."""


class FileRootUnknown(ValidationError):
    """Fragments to delete live in `file://` stores, but no file root was given."""

    def __init__(self, fragment: pb.Fragment, words: Words = GAZCTL) -> None:
        super().__init__(words.file_root, (
            f"journal {fragment.journal} keeps fragments in {fragment.backing_store} but the "
            f"brokers' file root is unknown; pass their --broker.file-root as "
            f"{words.file_root.removeprefix('option ')} or ${FILE_ROOT_ENV}"))


class ListingProgress(Protocol):
    """Told how many journals will be listed, then of each one listed (gazctl draws a bar)."""

    def start(self, total: int) -> None: ...

    def advance(self, n: int = 1) -> None: ...


@dataclass
class Selection:
    """What the driver listed: each examined journal with its fragments, and suspended ones."""

    journals: list[tuple[pb.JournalSpec, list[pb.Fragment]]] = field(default_factory=list)
    suspended: list[str] = field(default_factory=list)
    # Created so recently that no broker serves them yet (only with `skip_unassigned`).
    unassigned: list[str] = field(default_factory=list)


# What a broker answers for a journal the allocator has not yet assigned.
UNASSIGNED = frozenset({pb.INSUFFICIENT_JOURNAL_BROKERS, pb.NO_JOURNAL_PRIMARY_BROKER})


def is_suspended(spec: pb.JournalSpec) -> bool:
    return suspend_level(spec) != pb.JournalSpec.Suspend.NONE


async def fetch_selection(stub: JournalAsyncStub, selector: pb.LabelSelector, text: str,
                          timeout: float = DEFAULT_TIMEOUT,
                          progress: ListingProgress | None = None,
                          skip_unassigned: bool = False, to_head: bool = False,
                          client: ClientConfig | None = None) -> Selection:
    """The journals `selector` matches with all their fragments; suspended ones set aside.

    `progress`, if given, learns how many journals are listed and each one as it is done.
    With `skip_unassigned`, a journal no broker serves yet (just created, not yet
    assigned) is set aside in `unassigned` instead of failing the listing. With `to_head`,
    each journal's fragments reach its write head (head_listing.py; `client` dials the
    members of its route): what reads need.
    """
    listed = await list_journals(stub, selector, timeout=timeout)
    if not listed.journals:
        raise NothingMatched(f"no journals match {text!r}")
    out = Selection()
    active = []
    routes = {j.spec.name: j.route for j in listed.journals}
    for j in listed.journals:
        if is_suspended(j.spec):
            out.suspended.append(j.spec.name)
        else:
            active.append(j.spec)
    if progress is not None:
        progress.start(len(active))

    async def list_one(spec: pb.JournalSpec) -> list[pb.FragmentsResponse._Fragment] | None:
        def listed(at: JournalAsyncStub, do_not_proxy: bool) -> Awaitable[Listing]:
            return fragments_retrying(at, spec.name, timeout, do_not_proxy)

        try:
            route = routes[spec.name]
            fragments = (await listing_to_head(stub, spec.name, route, listed, client)
                         if to_head else await listed(stub, False))
        except StatusError as e:
            if skip_unassigned and e.status in UNASSIGNED:
                return None
            raise
        if progress is not None:
            progress.advance()  # Journals are listed in parallel: count each as it finishes.
        return fragments

    pages = await asyncio.gather(*(list_one(spec) for spec in active))
    for spec, fragments in zip(active, pages, strict=True):
        if fragments is None:
            out.unassigned.append(spec.name)
        else:
            out.journals.append((spec, [f.spec for f in fragments]))
    return out


async def fragments_retrying(stub: JournalAsyncStub, journal: str, timeout: float,
                             do_not_proxy: bool = False) -> Listing:
    """The journal's fragments, listing again after a retriable failure for up to `timeout`.

    The broker asked proxies a listing to a member of the journal; while a member that
    died is still routed (until its lease ends or it restarts), the listing fails as
    unavailable and a retry reaches the journal's next route. A journal no broker serves
    is not waited for: the caller fails or sets it aside at once (UNASSIGNED).
    """
    backoff = Backoff()
    loop = asyncio.get_running_loop()
    give_up = loop.time() + timeout
    while True:
        try:
            return await list_fragments(stub, pb.FragmentsRequest(
                journal=journal, do_not_proxy=do_not_proxy),
                timeout=max(give_up - loop.time(), 0.1))
        except GazetteError as e:
            delay = backoff.next_delay()
            if (not e.retriable or loop.time() + delay > give_up
                    or (isinstance(e, StatusError) and e.status in UNASSIGNED)):
                raise
            await asyncio.sleep(delay)


def list_selection(broker: str, selector: str, timeout: float = DEFAULT_TIMEOUT,
                   client: ClientConfig | None = None, to_head: bool = False) -> Selection:
    """The journals `selector` matches and their fragments, listed through `broker`
    (`to_head`: up to each one's write head, as reads need)."""
    if not selector.strip():
        raise ValidationError("--selector", "a selector is required, e.g. -l name=acme/clicks")
    sel = parse_selector(selector)

    async def fetch() -> Selection:
        try:
            return await fetch_selection(journal_stub(broker, client), sel, selector, timeout,
                                         to_head=to_head, client=client)
        finally:
            await close_channels()

    return asyncio.run(fetch())


def uses_file_root(store: str, file_only: bool) -> bool:
    """Whether fragments of `store` live under the file root (`file://`, or any in file-only)."""
    return file_only or urlsplit(store).scheme == "file"


def check_file_root(expired: Iterable[pb.Fragment], file_root: str | None,
                    file_only: bool, words: Words = GAZCTL) -> None:
    """Refuse to go on when a fragment to delete needs a file root that is missing or wrong."""
    needing = next((f for f in expired if uses_file_root(f.backing_store, file_only)), None)
    if needing is None:
        return
    if not file_root:
        raise FileRootUnknown(needing, words)
    if not Path(file_root).is_dir():
        raise ValidationError(words.file_root, f"{file_root!r} is not a directory (it must "
                                               "be the brokers' --broker.file-root)")
