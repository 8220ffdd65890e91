"""The ListFragments RPC: pages over the replica's fragment cover set."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.durations_ext import to_seconds
from gazette_core.broker.protocol.flags_ext import may_read
from gazette_core.broker.protocol.validate_ext import validate_fragments_request
from gazette_core.broker.proxy import proxy_list_fragments
from gazette_core.broker.stores.metered import metered_store

if TYPE_CHECKING:
    from gazette_core.broker.service import Broker

DEFAULT_PAGE_LIMIT = 1000


async def serve_list_fragments(broker: Broker, req: pb.FragmentsRequest
                               ) -> pb.FragmentsResponse:
    validate_fragments_request(req)
    res = await broker.resolver.resolve(
        req.journal, require_primary=False, may_proxy=not req.do_not_proxy,
        proxy_header=req.header if req.HasField("header") else None)
    if res.status == pb.OK and res.spec is not None and not may_read(res.spec):
        res.status = pb.NOT_ALLOWED
    if res.status != pb.OK:
        return pb.FragmentsResponse(status=res.status, header=res.header)
    if res.replica is None:  # not a member: a member answers through us
        return await proxy_list_fragments(broker, res, req)
    assert res.replica is not None
    await res.replica.index.wait_first_refresh()
    resp = pb.FragmentsResponse(status=pb.OK, header=res.header)
    limit = req.page_limit or DEFAULT_PAGE_LIMIT
    ttl = to_seconds(req.signatureTTL) if req.HasField("signatureTTL") else 0.0
    for entry in res.replica.index.entries():
        frag = entry.fragment
        if frag.begin < req.next_page_token or _filtered(frag, req):
            continue
        if len(resp.fragments) == limit:
            resp.next_page_token = frag.begin
            break
        out = resp.fragments.add(spec=frag)
        if ttl and frag.backing_store:
            store = metered_store(broker.store_for(frag.backing_store))
            out.signed_url = store.sign_get(frag, ttl)
    return resp


def _filtered(frag: pb.Fragment, req: pb.FragmentsRequest) -> bool:
    # end_mod_time is inclusive, as in the Go broker.
    if frag.mod_time and frag.mod_time < req.begin_mod_time:
        return True
    return bool(req.end_mod_time and (frag.mod_time == 0 or frag.mod_time > req.end_mod_time))
