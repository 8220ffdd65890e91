"""A journal replica hosted by this broker: its spool, fragment index and refresh loop.

The resolver creates one per local assignment. Appends hold `pipeline_lock`
while they stream into the spool; reads only touch the index. Rolled spools go
to the persister, and each store listing (every `refresh_interval`) replaces
the index's remote fragments.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time

from gazette_core.broker.append_throttle import RateBank
from gazette_core.broker.fragment.index import FragmentIndex
from gazette_core.broker.fragment.persister import Persister
from gazette_core.broker.fragment.spool import Spool
from gazette_core.broker.pipeline import Pipeline
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.durations_ext import to_seconds
from gazette_core.broker.stores.metered import metered_store
from gazette_core.broker.stores.registry import get_store
from gazette_core.keyspace.keyspace import KeyValue
from gazette_core.metrics.families import Cell
from gazette_core.tasks import BackgroundTask

log = logging.getLogger(__name__)

# Used when a spec leaves refresh_interval unset (validation requires >= 1s,
# but a replica must never spin).
DEFAULT_REFRESH_S = 60.0
RETRY_REFRESH_S = 5.0
# How long a replica holds back persisting a fragment the primary should persist.
REPLICA_PERSIST_DELAY_S = 150.0


class Replica:
    """One journal's local state on this broker."""

    def __init__(self, journal: str, item: KeyValue, persister: Persister, file_root: str,
                 spool_dir: str | None = None, file_only: bool = False) -> None:
        self.journal = journal
        self.create_revision = item.create_revision
        self.spec: pb.JournalSpec = _spec_of(item)
        self.persister = persister
        self.file_root = file_root
        self.file_only = file_only  # --broker.file-only: list file:/// in file_root instead
        self.spool_dir = spool_dir
        self.spool = Spool(journal, spool_dir)
        self.index = FragmentIndex()
        # Held by an Append while it streams (on the primary) and by the
        # Replicate stream from the primary (on a replica): one writer at a time.
        self.pipeline_lock = asyncio.Lock()
        # Appends queued for pipeline_lock (append_queue caps them).
        self.pipeline_waiting = 0
        self.pipeline: Pipeline | None = None
        # The journal's bank of append bytes, drawn on by appends it takes as primary.
        self.append_bank = RateBank()
        # Whether this broker last acted as the journal's primary: primaries persist
        # rolled spools at once, replicas only later, as a safety net.
        self.primary = False
        self._delayed: dict[asyncio.TimerHandle, functools.partial[None]] = {}
        # Replicate handlers serving this replica's spool, each with the primary it
        # serves as (zone, suffix), or None for a route without a primary.
        self.streams: dict[asyncio.Task[object], tuple[str, str] | None] = {}
        # Set once the spool agrees with a primary's (a pipeline synchronised it): from
        # then on every acknowledged append reaches it while it stays in the route.
        self.synced = False
        # Its series of gazette_write_head, set by each append it commits as primary.
        self.write_head_gauge: Cell | None = None
        self._revoked: set[asyncio.Task[object]] = set()
        self._refresh_now = asyncio.Event()
        self._refresher = BackgroundTask(f"refresh {journal}")

    # -- lifecycle ----------------------------------------------------------

    def start(self) -> None:
        self._refresher.start(self._refresh_loop)

    def on_spec(self, item: KeyValue) -> None:
        spec = _spec_of(item)
        if list(spec.fragment.stores) != list(self.spec.fragment.stores):
            self._refresh_now.set()
        self.spec = spec

    def spawn_stop(self) -> None:
        asyncio.get_running_loop().create_task(self.stop(), name=f"stop {self.journal}")

    async def stop(self) -> None:
        """Roll the spool so its content persists, and end the refresh loop."""
        await self._refresher.stop()
        for task in list(self.streams):  # they hold the lock for as long as the primary streams
            self._revoke(task)
        async with self.pipeline_lock:
            await self.close_pipeline()
            self.become_primary()  # what is rolled now must be persisted now
            if self.spool.content_length() > 0:
                self.roll(self.spool.fragment.end, self.spool.fragment.compression_codec)

    def become_primary(self) -> None:
        """Persist rolled spools at once from now on, and those held back so far.

        As a replica this broker held rolled spools back, since their primary
        persists them. A primary that died before persisting leaves them to us:
        held back longer, they would be lost with this broker too.
        """
        self.primary = True
        delayed, self._delayed = self._delayed, {}
        for handle, persist in delayed.items():
            handle.cancel()
            persist()

    def on_route(self, primary: tuple[str, str] | None, is_primary: bool) -> None:
        """A demoted primary closes its pipeline, releasing the peers' spools.

        `primary` is the route's primary as (zone, suffix). Streams of a broker
        that is no longer the route's primary are cancelled: one that froze or
        went silent would otherwise hold the spool for ever, and the new primary
        could never synchronise this replica.
        """
        if not is_primary and self.pipeline is not None:
            asyncio.get_running_loop().create_task(self._demote(), name=f"demote {self.journal}")
        for task, sender in list(self.streams.items()):
            if sender is None or sender != primary:
                log.info("cancelling the Replicate stream of a broker no longer primary",
                         extra={"journal": self.journal})
                self._revoke(task)

    def _revoke(self, task: asyncio.Task[object]) -> None:
        if task not in self._revoked:
            self._revoked.add(task)
            task.cancel()

    def take_revoked(self, task: asyncio.Task[object]) -> bool:
        """Whether `task` was cancelled by a revocation (forgetting it)."""
        if task in self._revoked:
            self._revoked.discard(task)
            return True
        return False

    async def _demote(self) -> None:
        async with self.pipeline_lock:
            await self.close_pipeline()

    def mark_synced(self) -> None:
        """Record that the spool agrees with the primary's, so it ends at the write head."""
        self.synced = True

    def write_head(self) -> int:
        """The journal's write head as known here: a synchronised spool's end bounds it."""
        end = self.index.end_offset
        return max(end, self.spool.fragment.end) if self.synced else end

    async def close_pipeline(self) -> None:
        pipeline, self.pipeline = self.pipeline, None
        if pipeline is not None:
            await pipeline.close()

    # -- spool transitions ----------------------------------------------------

    def apply(self, req: pb.ReplicateRequest) -> pb.ReplicateResponse:
        """Apply a proposal or content to the spool, indexing commits and persisting rolls."""
        resp, completed = self.spool.apply(req)
        if completed is not None:
            self._persist(completed)
        if req.HasField("proposal") and resp.status == pb.OK:
            frag = self.spool.fragment
            if frag.end > frag.begin:
                snapshot = pb.Fragment()
                snapshot.CopyFrom(frag)
                self.index.add_local(snapshot, self.spool)
        return resp

    def _persist(self, completed: Spool) -> None:
        if self.primary:
            self.persister.enqueue(completed, self.spec, self._on_persisted)
            return
        # The primary persists this fragment; ours is a fallback should it die.
        persist = functools.partial(self.persister.enqueue, completed, self.spec,
                                    self._on_persisted)

        def later() -> None:
            self._delayed.pop(handle, None)
            persist()

        handle = asyncio.get_running_loop().call_later(REPLICA_PERSIST_DELAY_S, later)
        self._delayed[handle] = persist

    def rollback_local(self) -> None:
        """Discard uncommitted content of the local spool only."""
        if self.spool.delta:
            self.apply(pb.ReplicateRequest(proposal=self.spool.fragment,
                                           registers=self.spool.registers, acknowledge=True))

    def roll(self, offset: int, codec: int) -> pb.ReplicateResponse:
        proposal = self.spool.roll_proposal(offset, codec)
        return self.apply(pb.ReplicateRequest(
            proposal=proposal, registers=self.spool.registers, acknowledge=True))

    def _on_persisted(self, fragment: pb.Fragment) -> None:
        self._refresh_now.set()

    # -- store listing ----------------------------------------------------------

    async def refresh(self) -> None:
        """List every store of the journal and replace the index's remote fragments."""
        fragments: list[pb.Fragment] = []
        for url in self.spec.fragment.stores:
            store = metered_store(get_store(url, self.file_root, self.file_only))
            fragments.extend(await store.list(self.journal))
        self.index.replace_remote(fragments)
        self._release_persisted(fragments)

    def _release_persisted(self, listed: list[pb.Fragment]) -> None:
        """Stop holding back rolled spools the store already has, closing their files.

        Until then each keeps its spool file, and the space it takes, for
        REPLICA_PERSIST_DELAY_S.
        """
        for handle, persist in list(self._delayed.items()):
            held = persist.args[0].fragment
            if any(f.begin <= held.begin and held.end <= f.end for f in listed):
                handle.cancel()
                del self._delayed[handle]

    async def _refresh_loop(self) -> None:
        while True:
            delay = to_seconds(self.spec.fragment.refresh_interval) or DEFAULT_REFRESH_S
            try:
                await self.refresh()
            except Exception as exc:  # a store outage must not end the loop
                log.warning("fragment listing failed", extra={"journal": self.journal,
                                                              "error": str(exc)})
                delay = min(delay, RETRY_REFRESH_S)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._refresh_now.wait()
            self._refresh_now.clear()

    def flush_due(self, now: float | None = None) -> bool:
        """Whether flush_interval asks for a roll: the first append's UTC bucket has passed."""
        interval = to_seconds(self.spec.fragment.flush_interval)
        first = self.spool.first_append_time
        if interval <= 0 or first is None:
            return False
        now = time.time() if now is None else now
        return int(first // interval) != int(now // interval)


def _spec_of(item: KeyValue) -> pb.JournalSpec:
    spec = item.decoded
    assert isinstance(spec, pb.JournalSpec), f"item {item.key} holds no JournalSpec"
    return spec
