"""The Append's pipeline acquisition: resolve as primary, then a synchronised pipeline.

`append_api` runs an append through these: `resolve_for_append` waits for
this broker to be the journal's primary on a large enough route,
`sync_pipeline` builds (or reuses) the journal's pipeline and brings its
replicas to one fragment (`pipeline_sync`), and advertises the route in Etcd;
`oversized` tells the caller to wait out an allocator shrinking the route.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from gazette_core.broker import suspension
from gazette_core.broker.pipeline import Pipeline
from gazette_core.broker.pipeline_sync import synchronize
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.route_ext import route_equivalent
from gazette_core.broker.replica import Replica
from gazette_core.broker.resolver import Resolution
from gazette_core.keyspace import etcd_util

if TYPE_CHECKING:
    from gazette_core.broker.service import Broker

log = logging.getLogger(__name__)


async def resolve_for_append(broker: Broker, req: pb.AppendRequest) -> Resolution:
    """Resolve as primary, waiting out an allocator that is still shrinking the route."""
    while True:
        broker.fence_appends()
        res = await broker.resolver.resolve(
            req.journal, require_primary=True, may_proxy=not req.do_not_proxy,
            proxy_header=req.header if req.HasField("header") else None,
            min_revision=req.min_etcd_revision)
        if res.status == pb.SUSPENDED and req.suspend == pb.AppendRequest.SUSPEND_RESUME:
            await suspension.resume_full(broker, res)
            continue
        if res.status != pb.OK or res.header.process_id != broker.process_id:
            return res  # a status, or a primary elsewhere to proxy to
        if len(res.route.members) < broker.desired_replication(res.spec):
            res.status = pb.INSUFFICIENT_JOURNAL_BROKERS
            return res
        if res.replica is not None:
            # A route larger than desired (the allocator is shrinking it) is
            # synced and advertised first, then waited out by the caller.
            return res
        await broker.keyspace.wait_for_change(broker.keyspace.revision)


def oversized(broker: Broker, res: Resolution) -> bool:
    """Whether the route has more members than desired (an allocator move in flight)."""
    return len(res.route.members) > broker.desired_replication(res.spec)


async def sync_pipeline(broker: Broker, replica: Replica, res: Resolution) -> Pipeline | None:
    """The journal's synchronised pipeline for `res`'s route, building it if needed.

    None means a peer knows a newer route: we waited for its revision and
    the caller must resolve again.
    """
    pipeline = replica.pipeline
    if pipeline is not None and (pipeline.broken is not None
                                 or not route_equivalent(pipeline.route, res.route)
                                 or pipeline.renew_at <= asyncio.get_running_loop().time()):
        await replica.close_pipeline()
        pipeline = None
    if pipeline is None:
        pipeline = await _new_pipeline(broker, replica, res)
        if pipeline is None:
            return None
    await _advertise_route(broker, res)
    return pipeline


async def _new_pipeline(broker: Broker, replica: Replica, res: Resolution) -> Pipeline | None:
    replica.become_primary()
    metadata, renew_at = broker.security.replication(replica.journal)
    pipeline = Pipeline(replica, res.header, broker.security.peer_channel, metadata=metadata,
                        renew_at=renew_at)
    replica.pipeline = pipeline
    codec = replica.spec.fragment.compression_codec
    try:
        pipeline.open()
        result = await synchronize(pipeline, codec)
        if result.wait_revision:
            await replica.close_pipeline()
            await broker.keyspace.wait_for_revision(result.wait_revision)
            return None
        # A spool that never held content (every replica fresh after a
        # restart) continues where the persisted fragments end. The store
        # is listed anew first: a previous primary that just left may have
        # persisted its last fragment after our latest listing.
        if replica.spool.fragment.end == 0:
            await replica.refresh()
            if replica.index.end_offset > 0:
                await pipeline.roll(replica.index.end_offset, codec)
        replica.mark_synced()
    except BaseException:
        await replica.close_pipeline()
        raise
    return pipeline


async def _advertise_route(broker: Broker, res: Resolution) -> None:
    """Write the route into assignment values that do not yet hold it.

    See docs/design/etcd.md#route-consistency.
    """
    value = res.route.SerializeToString()
    stale = [kv for kv in res.assignments if kv.raw != value]
    if not stale:
        return
    compares = [etcd_util.cmp_mod_revision(kv.key, kv.mod_revision) for kv in res.assignments]
    ops = [etcd_util.put_op(kv.key, value, ignore_lease=True) for kv in stale]
    try:
        resp = await etcd_util.txn(broker.etcd, compares, ops)
    except etcd_util.EtcdUnavailableError as exc:
        # Appends on the current route stay safe; the next append or pulse retries.
        log.warning("could not advertise the route of %s: %s", res.journal, exc)
        return
    if resp.succeeded:
        await broker.keyspace.wait_for_revision(resp.header.revision)
