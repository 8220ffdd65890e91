"""The FragmentStoreHealth RPC: can this broker write, list and read a store?

A probe object `.test/health-check` is written, listed and read back; any
failure is reported as FRAGMENT_STORE_UNHEALTHY with the store's error text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.route_ext import unrouted_header
from gazette_core.broker.protocol.validate_ext import validate_store_url
from gazette_core.broker.stores.registry import get_store

if TYPE_CHECKING:
    from gazette_core.broker.service import Broker

PROBE = pb.Fragment(journal=".test", begin=0, end=13, compression_codec=pb.NONE)
PROBE_CONTENT = b"health-check\n"


async def serve_store_health(broker: Broker, req: pb.FragmentStoreHealthRequest
                             ) -> pb.FragmentStoreHealthResponse:
    validate_store_url(req.fragment_store)
    header = unrouted_header(broker.process_id, broker.keyspace.header)
    error = await check_store(req.fragment_store, broker.config.file_root)
    if error:
        return pb.FragmentStoreHealthResponse(status=pb.FRAGMENT_STORE_UNHEALTHY, header=header,
                                              store_health_error=error)
    return pb.FragmentStoreHealthResponse(status=pb.OK, header=header)


async def check_store(url: str, file_root: str) -> str:
    """Empty when the store passes a put/list/read round trip, else the error text."""
    try:
        store = get_store(url, file_root)
        await store.put(PROBE, PROBE_CONTENT)
        listed = await store.list(PROBE.journal)
        if not any(f.end == PROBE.end for f in listed):
            return "health-check object was written but not listed"
        content = b"".join([chunk async for chunk in store.open(PROBE)])
        if content != PROBE_CONTENT:
            return "health-check object read back different content"
    except Exception as exc:  # any store failure is the answer, not a crash
        return str(exc) or type(exc).__name__
    return ""
