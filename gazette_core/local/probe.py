"""A readiness probe: does a broker answer a List RPC?

A broker with auth keys is asked with a LIST token signed by the first key.
"""

from __future__ import annotations

import asyncio

import grpc

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.server import auth

# A List whose selector matches no journal and no shard: the probe asks whether a
# process answers, and an answer listing everything can pass gRPC's 4 MiB default
# for a received message on a cluster with many (or large) specs.
NOTHING = pb.LabelSelector(include=pb.LabelSet(labels=[
    pb.Label(name="gazette.dev/readiness-probe", value="none")]))


def list_metadata(auth_keys: str) -> tuple[tuple[str, str], ...] | None:
    """Metadata authorizing a List with a token signed by the first of `auth_keys`."""
    keys = auth.parse_keys(auth_keys)
    if keys is None:
        return None
    return (("authorization", f"Bearer {auth.mint(keys.signing, auth.LIST)}"),)


async def broker_serves_async(endpoint: str, timeout: float = 1.0, auth_keys: str = "") -> bool:
    target = endpoint.split("://", 1)[-1]
    metadata = list_metadata(auth_keys)
    try:
        async with grpc.aio.insecure_channel(target) as channel:
            call = pb_grpc.JournalStub(channel).List(pb.ListRequest(selector=NOTHING),
                                                     timeout=timeout, metadata=metadata)
            async for resp in call:
                return bool(resp.status == pb.OK)
    except grpc.aio.AioRpcError:
        return False
    return False


def broker_serves(endpoint: str, timeout: float = 1.0, auth_keys: str = "") -> bool:
    """Blocking form, for the process supervisor (which runs outside any event loop)."""
    return asyncio.run(broker_serves_async(endpoint, timeout, auth_keys))
