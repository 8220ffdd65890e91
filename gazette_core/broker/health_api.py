"""The FragmentStoreHealth RPC: the latest background check of a store.

See docs/design/protocol.md#fragmentstorehealth.

The first request for a store starts its background checks and waits for the
first result. With `check_delete`, a probe under `check_delete_prefix` is also
written and deleted, which periodic checks never do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.route_ext import unrouted_header
from gazette_core.broker.protocol.validate_ext import validate_fragment_store_health_request

if TYPE_CHECKING:
    from gazette_core.broker.service import Broker
    from gazette_core.broker.stores.base import FragmentStore

DELETE_PROBE_CONTENT = b"gazette-delete-probe\n"


async def serve_store_health(broker: Broker, req: pb.FragmentStoreHealthRequest
                             ) -> pb.FragmentStoreHealthResponse:
    validate_fragment_store_health_request(req)
    header = unrouted_header(broker.process_id, broker.keyspace.header)
    health = broker.store_health.health(req.fragment_store, limited=True)
    error = await health.await_first_check()
    if not error and req.check_delete:
        error = await check_delete(health.store, req.check_delete_prefix)
    if error:
        return pb.FragmentStoreHealthResponse(status=pb.FRAGMENT_STORE_UNHEALTHY, header=header,
                                              store_health_error=error)
    return pb.FragmentStoreHealthResponse(status=pb.OK, header=header)


async def check_delete(store: FragmentStore, prefix: str) -> str:
    """Empty when a probe object under `prefix` can be written and deleted, else why not.

    Stores address objects by fragment, so the probe is a one-fragment
    journal named `<prefix>.gazette-delete-probe`.
    """
    probe = pb.Fragment(journal=f"{prefix}.gazette-delete-probe", begin=0,
                        end=len(DELETE_PROBE_CONTENT), compression_codec=pb.NONE)
    try:
        await store.put(probe, DELETE_PROBE_CONTENT)
        await store.delete(probe)
    except Exception as exc:  # the store's failure is the answer
        return f"delete probe: {exc or type(exc).__name__}"
    return ""
