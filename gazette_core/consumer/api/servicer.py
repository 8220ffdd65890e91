"""The grpc.aio servicer of `consumer.Shard`, serving from a `ShardHost` (`host`).

Each method delegates to its handler module beside this one. A request that fails validation
is answered INVALID_ARGUMENT with a one-line message naming the field path;
other failures map through `server.statuses` (etcd unreachable is
UNAVAILABLE). Statuses of the protocol (SHARD_NOT_FOUND, NO_SHARD_PRIMARY,
NOT_SHARD_PRIMARY, ETCD_TRANSACTION_FAILED, SHARD_STOPPED) are answered in the
response message, never as gRPC errors. Register with `add_shard_servicer`,
which decodes requests tolerantly as the broker's servicer does; auth uses
the broker's interceptor with `SHARD_CAPABILITIES`.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import grpc

from gazette_core.consumer.api.apply import serve_apply
from gazette_core.consumer.api.authz import SERVICE, SHARD_CAPABILITIES
from gazette_core.consumer.api.hints import serve_get_hints, serve_unassign
from gazette_core.consumer.api.host import ShardHost
from gazette_core.consumer.api.list import serve_list
from gazette_core.consumer.api.stat import serve_stat
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol import consumer_pb2_grpc as cpb_grpc
from gazette_core.server.rpc_abort import AbortOnError
from gazette_core.server.tolerant_decoding import add_tolerant, check

Context: TypeAlias = "grpc.aio.ServicerContext[Any, Any]"
STAT, LIST, APPLY = f"{SERVICE}/Stat", f"{SERVICE}/List", f"{SERVICE}/Apply"
GETHINTS, UNASSIGN = f"{SERVICE}/GetHints", f"{SERVICE}/Unassign"

__all__ = ["SHARD_CAPABILITIES", "ShardHost", "ShardServicer", "add_shard_servicer"]


def _caller_auth(context: Context) -> list[tuple[str, str]]:
    return [(str(k), str(v)) for k, v in (context.invocation_metadata() or ())
            if k == "authorization"]


class ShardServicer(cpb_grpc.ShardServicer):
    """Serves the Shard service of one consumer process."""

    def __init__(self, service: ShardHost) -> None:
        self.host = service

    async def Stat(self, request: cpb.StatRequest, context: Context) -> cpb.StatResponse:
        async with AbortOnError(context, STAT, invalid_argument=True):
            return await serve_stat(self.host, check(request, context, STAT),
                                    _caller_auth(context))

    async def List(self, request: cpb.ListRequest, context: Context) -> cpb.ListResponse:
        async with AbortOnError(context, LIST, invalid_argument=True):
            return await serve_list(self.host, check(request, context, LIST))

    async def Apply(self, request: cpb.ApplyRequest, context: Context) -> cpb.ApplyResponse:
        async with AbortOnError(context, APPLY, invalid_argument=True):
            return await serve_apply(self.host, check(request, context, APPLY))

    async def GetHints(self, request: cpb.GetHintsRequest, context: Context
                       ) -> cpb.GetHintsResponse:
        async with AbortOnError(context, GETHINTS, invalid_argument=True):
            return await serve_get_hints(self.host, check(request, context, GETHINTS))

    async def Unassign(self, request: cpb.UnassignRequest, context: Context
                       ) -> cpb.UnassignResponse:
        async with AbortOnError(context, UNASSIGN, invalid_argument=True):
            return await serve_unassign(self.host, check(request, context, UNASSIGN))


def add_shard_servicer(server: grpc.aio.Server, host: ShardHost) -> ShardServicer:
    """Register the Shard service of `host` on `server`, decoding requests tolerantly."""
    servicer = ShardServicer(host)
    add_tolerant(cpb_grpc.add_ShardServicer_to_server, servicer, server)
    return servicer
