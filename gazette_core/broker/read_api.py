"""The Read RPC: metadata then content chunks, from the spool or persisted fragments.

Shape and offset rules follow docs/design/protocol.md#read: the header rides only on the
first response; each fragment is announced by a metadata response before its
content; content responses carry just offset and bytes, at most 32736 each.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from gazette_core.broker import metrics
from gazette_core.broker.fragment.index import IndexEntry
from gazette_core.broker.fragment.remote import read_fragment
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.flags_ext import may_read
from gazette_core.broker.protocol.validate_ext import validate_read_request
from gazette_core.broker.proxy import proxy_read
from gazette_core.broker.resolver import Resolution
from gazette_core.broker.stores.base import StoreNotFoundError
from gazette_core.broker.stores.metered import metered_store

if TYPE_CHECKING:
    from gazette_core.broker.service import Broker

CHUNK_SIZE = (1 << 15) - 32
# Local spool content is read in larger blocks and sliced, to save syscalls.
LOCAL_READ_BLOCK = 32 * CHUNK_SIZE
SIGNED_URL_TTL_S = 60.0


async def serve_read(broker: Broker, req: pb.ReadRequest) -> AsyncIterator[pb.ReadResponse]:
    """Yield the responses of one Read RPC."""
    validate_read_request(req)
    res = await broker.resolver.resolve(
        req.journal, require_primary=False, may_proxy=not req.do_not_proxy,
        proxy_header=req.header if req.HasField("header") else None,
        min_revision=req.min_etcd_revision)
    if res.status == pb.OK and res.spec is not None and not may_read(res.spec):
        res.status = pb.NOT_ALLOWED
    if res.status != pb.OK:
        yield pb.ReadResponse(status=res.status, header=res.header)
        return
    if res.replica is None:  # not a member: a member serves it through us
        async for resp in proxy_read(broker, res, req):
            yield resp
        return
    assert res.replica is not None
    metrics.READS.value += 1
    header: pb.Header | None = res.header
    async for resp in _serve_local(broker, res, req):
        if header is not None:
            resp.header.CopyFrom(header)
            header = None
        elif resp.HasField("header"):
            resp.ClearField("header")  # a relayed stream's own header: ours came first
        yield resp


def _primary_to_ask(broker: Broker, res: Resolution, req: pb.ReadRequest, offset: int
                    ) -> pb.ProcessSpec.ID | None:
    """The primary, when this replica cannot tell what lies at `offset` but it can.

    A replica knows the write head only once a pipeline synchronised its spool,
    and content before its spool that it joined the route too late to receive
    and that is not persisted yet is held by the primary alone.
    """
    replica = res.replica
    assert replica is not None
    route = res.route
    if req.do_not_proxy or route.primary < 0:
        return None
    primary = route.members[route.primary]
    if primary == broker.process_id:
        return None
    if replica.synced and (offset == -1 or offset >= replica.spool.fragment.begin):
        return None
    return primary


async def _serve_local(broker: Broker, res: Resolution, req: pb.ReadRequest
                       ) -> AsyncIterator[pb.ReadResponse]:
    replica = res.replica
    assert replica is not None
    offset = req.offset
    if offset == -1 and replica.synced:
        offset = replica.write_head()
    index = replica.index
    vanished: set[tuple[int, int]] = set()  # listed fragments their store no longer had
    while True:
        entry, offset = index.query(offset, req.begin_mod_time)
        if entry is None:
            primary = _primary_to_ask(broker, res, req, offset)
            if primary is not None:
                rest = pb.ReadRequest()
                rest.CopyFrom(req)
                rest.offset = offset
                async for resp in proxy_read(broker, res, rest, target=primary):
                    yield resp
                return
            if not req.block:
                yield pb.ReadResponse(status=pb.OFFSET_NOT_YET_AVAILABLE, offset=offset,
                                      write_head=replica.write_head())
                return
            await index.wait_for_change()
            continue
        frag = entry.fragment
        yield _metadata(broker, entry, offset, replica.write_head())
        remote = entry.local is None
        if req.metadata_only or (remote and req.do_not_proxy) or (
                req.end_offset and offset >= req.end_offset):
            return
        stop = frag.end if not req.end_offset else min(frag.end, req.end_offset)
        sent = False
        try:
            async for resp in _content(broker, entry, offset, stop):
                sent = True
                yield resp
        except StoreNotFoundError:
            # Deleted (pruned) since the index last listed its stores: list them again
            # and query anew, which jumps past it; the next metadata says the offset.
            if not remote or sent or (frag.begin, frag.end) in vanished:
                raise
            vanished.add((frag.begin, frag.end))
            await replica.refresh()
            continue
        offset = stop
        if req.end_offset and offset >= req.end_offset:
            return


def _metadata(broker: Broker, entry: IndexEntry, offset: int, write_head: int
              ) -> pb.ReadResponse:
    frag = entry.fragment
    resp = pb.ReadResponse(status=pb.OK, offset=offset, write_head=write_head, fragment=frag)
    if frag.backing_store and frag.mod_time:
        store = metered_store(broker.store_for(frag.backing_store))
        resp.fragment_url = store.sign_get(frag, SIGNED_URL_TTL_S)
    return resp


async def _content(broker: Broker, entry: IndexEntry, offset: int, stop: int
                   ) -> AsyncIterator[pb.ReadResponse]:
    if entry.local is not None:
        spool = entry.local
        while offset < stop:
            block = spool.read_at(offset, min(LOCAL_READ_BLOCK, stop - offset))
            metrics.READ_SERVED_BYTES.value += len(block)
            for i in range(0, len(block), CHUNK_SIZE):
                yield pb.ReadResponse(offset=offset + i, content=block[i:i + CHUNK_SIZE])
            offset += len(block)
        return
    store = metered_store(broker.store_for(entry.fragment.backing_store))
    async for data in read_fragment(store, entry.fragment, offset):
        data = data[:stop - offset]
        metrics.READ_SERVED_BYTES.value += len(data)
        for i in range(0, len(data), CHUNK_SIZE):
            yield pb.ReadResponse(offset=offset + i, content=data[i:i + CHUNK_SIZE])
        offset += len(data)
        if offset >= stop:
            return
