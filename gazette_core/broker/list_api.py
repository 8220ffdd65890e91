"""The List RPC: journal specs with routes, as snapshots and optionally a watch.

Snapshots go out in messages of at most 25 journals; only the first carries
status and header. A watch ends each snapshot with an empty message and sends
a new one only when the match count or the largest mod revision changes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.labels_ext import matches, rewrite_prefix_meta, with_meta_name
from gazette_core.broker.protocol.route_ext import unrouted_header
from gazette_core.broker.protocol.validate_ext import validate_list_request
from gazette_core.server.authz import visible

if TYPE_CHECKING:
    from gazette_core.broker.service import Broker

PAGE_SIZE = 25


async def serve_list(broker: Broker, req: pb.ListRequest) -> AsyncIterator[pb.ListResponse]:
    """Yield the responses of one List RPC."""
    validate_list_request(req)
    selector = rewrite_prefix_meta(req.selector)
    keyspace = broker.keyspace
    if req.HasField("watch_resume"):
        await keyspace.wait_for_change(req.watch_resume.etcd.revision)
    last: tuple[int, int] | None = None
    while True:
        revision = keyspace.revision
        journals = snapshot(broker, selector)
        shape = (len(journals), max((j.mod_revision for j in journals), default=0))
        if shape != last:
            for resp in _pages(broker, journals):
                yield resp
            if req.watch:
                yield pb.ListResponse()
            last = shape
        if not req.watch:
            return
        await keyspace.wait_for_change(revision)


def snapshot(broker: Broker, selector: pb.LabelSelector) -> list[pb.ListResponse.Journal]:
    """Every matching journal in name order, with its route."""
    root = broker.config.etcd_prefix.rstrip("/")
    prefix = f"{root}/items/"
    names = [lb.value for lb in selector.include.labels if lb.name == "name" and not lb.prefix]
    if len(names) == 1:
        prefix += names[0]
    out: list[pb.ListResponse.Journal] = []
    for kv in broker.keyspace.prefixed(prefix):
        spec = kv.decoded
        if not isinstance(spec, pb.JournalSpec):
            continue
        if not matches(selector, with_meta_name(spec.labels, spec.name)):
            continue
        if not visible(spec.name, spec.labels):
            continue  # outside the RPC's claims
        route = broker.resolver.route_of(broker.resolver.assignments_of(spec.name))
        out.append(pb.ListResponse.Journal(spec=spec, mod_revision=kv.mod_revision,
                                           create_revision=kv.create_revision, route=route))
    return out


def _pages(broker: Broker, journals: list[pb.ListResponse.Journal]
           ) -> list[pb.ListResponse]:
    header = unrouted_header(broker.process_id, broker.keyspace.header)
    first = pb.ListResponse(status=pb.OK, header=header, journals=journals[:PAGE_SIZE])
    rest = [pb.ListResponse(journals=journals[i:i + PAGE_SIZE])
            for i in range(PAGE_SIZE, len(journals), PAGE_SIZE)]
    return [first, *rest]
