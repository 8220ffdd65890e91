"""The Allocator: runs on every member, changes assignments only while leading.

The leader is the member key with the lowest create revision. On every
KeySpace change it plans against a snapshot and applies the changes in
batched transactions that also assert its own member key is unchanged, so a
member that lost leadership (or its lease) cannot write. A failed transaction
just means the snapshot was stale: the next change brings a fresh one.
Planning (planner.py) re-solves the zone-aware max-flow assignment only when
its inputs change, and otherwise just converges toward the last solution.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Sequence

import aetcd
from aetcd import rpc

from gazette_core.allocator import metrics
from gazette_core.allocator.changes import Change
from gazette_core.allocator.consistency import route_consistent
from gazette_core.allocator.keys import AllocState
from gazette_core.allocator.planner import (
    Consistent,
    Desired,
    MemberExiting,
    MemberLimit,
    Planner,
    default_member_exiting,
    default_member_limit,
)
from gazette_core.errors import GazetteError
from gazette_core.keyspace import etcd_util
from gazette_core.keyspace.etcd_util import MAX_TXN_OPS
from gazette_core.keyspace.keyspace import KeySpace, KeyValue
from gazette_core.tasks import BackgroundTask

log = logging.getLogger(__name__)

# Pause after an etcd error so an unreachable cluster isn't hammered.
ERROR_DELAY = 1.0


def batches(changes: Sequence[Change], reserved: int = 1) -> Iterator[list[Change]]:
    """Consecutive groups of changes within MAX_TXN_OPS ops and compares each.

    `reserved` compares per batch are left for the caller's own guards.
    """
    batch: list[Change] = []
    ops = compares = 0
    for change in changes:
        n_ops, n_cmps = len(change.ops()), len(change.compares())
        if batch and (ops + n_ops > MAX_TXN_OPS or compares + n_cmps + reserved > MAX_TXN_OPS):
            yield batch
            batch, ops, compares = [], 0, 0
        batch.append(change)
        ops += n_ops
        compares += n_cmps
    if batch:
        yield batch


class Allocator:
    """Keeps the items under `root` assigned while `self_member_key` leads."""

    def __init__(
        self,
        client: aetcd.Client,
        keyspace: KeySpace,
        root: str,
        self_member_key: str,
        desired_replication: Desired,
        *,
        member_limit: MemberLimit = default_member_limit,
        consistent: Consistent = route_consistent,
        member_exiting: MemberExiting = default_member_exiting,
    ) -> None:
        self.client = client
        self.keyspace = keyspace
        self.root = root
        self.self_member_key = self_member_key
        self.desired_replication = desired_replication
        self.planner = Planner(desired_replication, member_limit, consistent, member_exiting)
        # The latest KeySpace revision at which a leading round found nothing to do.
        self.converged_revision = 0
        self._converged = asyncio.Event()
        self._loop = BackgroundTask("allocator")

    def start(self) -> None:
        """Allocate in a background task until `stop()`."""
        self._loop.start(self._run)

    async def stop(self) -> None:
        await self._loop.stop()

    def plan(self) -> tuple[KeyValue | None, list[Change]]:
        """This member's key and the changes due, if it leads; else (None, [])."""
        state = AllocState.from_keyspace(self.keyspace, self.root)
        leader = state.leader()
        if leader is None or leader.key != self.self_member_key:
            # Another member decides meanwhile: start afresh from its assignments.
            self.planner.forget()
            return None, []
        return leader, self.planner.plan(state)

    async def converge_once(self) -> bool:
        """Plan and apply one round; False if a transaction lost a race."""
        planned_at = self.keyspace.revision
        leader, changes = self.plan()
        if leader is None:
            return True
        if not changes:
            metrics.converged(self.planner.last_inputs)
            self._mark_converged(planned_at)
            return True
        guard = etcd_util.cmp_mod_revision(self.self_member_key, leader.mod_revision)
        revision = 0
        for batch in batches(changes):
            compares = [guard, *(c for change in batch for c in change.compares())]
            ops = [op for change in batch for op in change.ops()]
            resp = await etcd_util.txn(self.client, compares, ops)
            if not resp.succeeded:
                log.info("allocator txn lost a race at revision %d", self.keyspace.revision)
                return False
            revision = resp.header.revision
            metrics.applied(batch)
        metrics.converged(self.planner.last_inputs)
        log.debug("allocator applied %d changes", len(changes))
        # Plan the next round only from a snapshot that includes these writes.
        await self.keyspace.wait_for_revision(revision)
        return True

    def _mark_converged(self, revision: int) -> None:
        self.converged_revision = max(self.converged_revision, revision)
        self._converged.set()
        self._converged = asyncio.Event()

    async def wait_converged(self, revision: int) -> None:
        """Return once, leading, a round at `revision` or later found nothing left to do."""
        while self.converged_revision < revision:
            await self._converged.wait()

    async def _run(self) -> None:
        while True:
            seen = self.keyspace.revision
            try:
                await self.converge_once()
            except (rpc.AioRpcError, aetcd.ClientError, GazetteError) as exc:
                log.warning("allocator round failed: %s", exc)
                await asyncio.sleep(ERROR_DELAY)
            except Exception:
                # A bug in one round must not silently end allocation for the cluster.
                log.exception("allocator round failed")
                await asyncio.sleep(ERROR_DELAY)
            await self.keyspace.wait_for_change(seen)

