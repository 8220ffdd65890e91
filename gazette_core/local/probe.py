"""A readiness probe: does a broker answer a List RPC?"""

from __future__ import annotations

import asyncio

import grpc

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc


async def broker_serves_async(endpoint: str, timeout: float = 1.0) -> bool:
    target = endpoint.split("://", 1)[-1]
    try:
        async with grpc.aio.insecure_channel(target) as channel:
            call = pb_grpc.JournalStub(channel).List(pb.ListRequest(), timeout=timeout)
            async for resp in call:
                return bool(resp.status == pb.OK)
    except grpc.aio.AioRpcError:
        return False
    return False


def broker_serves(endpoint: str, timeout: float = 1.0) -> bool:
    """Blocking form, for the process supervisor (which runs outside any event loop)."""
    return asyncio.run(broker_serves_async(endpoint, timeout))
