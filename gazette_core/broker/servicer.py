"""The grpc.aio servicer of `protocol.Journal`, mapping library errors to gRPC errors.

Each method delegates to its `*_api` module. Validation failures and protocol
misuse surface as gRPC code UNKNOWN carrying the error text, as Go brokers do;
retriable failures (peers, proxies) as UNAVAILABLE; `server.statuses` has the
whole mapping, for every exception a method raises. Requests are decoded
tolerantly (`server.tolerant_decoding`): one that does not decode is refused
here as INVALID_ARGUMENT.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, TypeAlias

import grpc

from gazette_core.broker.append_api import serve_append
from gazette_core.broker.apply_api import serve_apply
from gazette_core.broker.fragments_api import serve_list_fragments
from gazette_core.broker.health_api import serve_store_health
from gazette_core.broker.list_api import serve_list
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.read_api import serve_read
from gazette_core.broker.replicate_api import serve_replicate
from gazette_core.server.rpc_abort import AbortOnError
from gazette_core.server.tolerant_decoding import check, checked

if TYPE_CHECKING:
    from gazette_core.broker.service import Broker

Context: TypeAlias = "grpc.aio.ServicerContext[Any, Any]"
SERVICE = "/protocol.Journal"
LIST = f"{SERVICE}/List"
APPLY = f"{SERVICE}/Apply"
READ = f"{SERVICE}/Read"
APPEND = f"{SERVICE}/Append"
LISTFRAGMENTS = f"{SERVICE}/ListFragments"
FRAGMENTSTOREHEALTH = f"{SERVICE}/FragmentStoreHealth"
REPLICATE = f"{SERVICE}/Replicate"


def _cancel_when_rpc_ends(context: Context) -> asyncio.Event:
    """Cancel the calling handler if its RPC ends (client cancel, deadline) before it does.

    grpc.aio does not always wake a handler blocked reading a client stream
    that was cancelled early, and an Append handler holds its journal's
    pipeline while it reads.
    """
    task = asyncio.current_task()
    finished = asyncio.Event()

    def on_done(_: object) -> None:
        if task is not None and not finished.is_set() and not task.done():
            task.cancel()

    context.add_done_callback(on_done)
    return finished


class JournalServicer(pb_grpc.JournalServicer):
    """Serves the Journal service of one Broker."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    async def List(self, request: pb.ListRequest, context: Context
                   ) -> AsyncIterator[pb.ListResponse]:
        async with AbortOnError(context, LIST):
            async for resp in serve_list(self.broker, check(request, context, LIST)):
                yield resp

    async def Apply(self, request: pb.ApplyRequest, context: Context
                    ) -> pb.ApplyResponse:
        async with AbortOnError(context, APPLY):
            return await serve_apply(self.broker, check(request, context, APPLY))

    async def Read(self, request: pb.ReadRequest, context: Context
                   ) -> AsyncIterator[pb.ReadResponse]:
        async with AbortOnError(context, READ):
            async for resp in serve_read(self.broker, check(request, context, READ)):
                yield resp

    async def Append(self, request_iterator: AsyncIterator[pb.AppendRequest],
                     context: Context) -> pb.AppendResponse:
        async with AbortOnError(context, APPEND):
            return await serve_append(self.broker,
                                      checked(request_iterator, context, APPEND))

    async def ListFragments(self, request: pb.FragmentsRequest, context: Context
                            ) -> pb.FragmentsResponse:
        async with AbortOnError(context, LISTFRAGMENTS):
            return await serve_list_fragments(self.broker,
                                              check(request, context, LISTFRAGMENTS))

    async def FragmentStoreHealth(self, request: pb.FragmentStoreHealthRequest,
                                  context: Context) -> pb.FragmentStoreHealthResponse:
        async with AbortOnError(context, FRAGMENTSTOREHEALTH):
            return await serve_store_health(self.broker,
                                            check(request, context, FRAGMENTSTOREHEALTH))

    async def Replicate(self, request_iterator: AsyncIterator[pb.ReplicateRequest],
                        context: Context) -> AsyncIterator[pb.ReplicateResponse]:
        done = _cancel_when_rpc_ends(context)
        try:
            async with AbortOnError(context, REPLICATE):
                async for resp in serve_replicate(
                        self.broker, checked(request_iterator, context, REPLICATE)):
                    yield resp
        finally:
            done.set()
