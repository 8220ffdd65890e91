"""The grpc.aio servicer of `consumer.Shard`, and the host it serves for.

Each method delegates to its `api_*` module. A request that fails validation
is answered INVALID_ARGUMENT with a one-line message naming the field path;
other failures map through `server.statuses` (etcd unreachable is
UNAVAILABLE). Statuses of the protocol (SHARD_NOT_FOUND, NO_SHARD_PRIMARY,
NOT_SHARD_PRIMARY, ETCD_TRANSACTION_FAILED, SHARD_STOPPED) are answered in the
response message, never as gRPC errors. Register with `add_shard_servicer`,
which decodes requests tolerantly as the broker's servicer does; auth uses
the broker's interceptor with `SHARD_CAPABILITIES`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

import aetcd
import grpc

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.api_apply import serve_apply
from gazette_core.consumer.api_authz import SERVICE, SHARD_CAPABILITIES
from gazette_core.consumer.api_hints import serve_get_hints, serve_unassign
from gazette_core.consumer.api_list import serve_list
from gazette_core.consumer.api_stat import serve_stat
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol import consumer_pb2_grpc as cpb_grpc
from gazette_core.errors import CodedError, ValidationError
from gazette_core.keyspace.keyspace import KeySpace
from gazette_core.server.statuses import abort
from gazette_core.server.tolerant_decoding import add_tolerant, check

Context: TypeAlias = "grpc.aio.ServicerContext[Any, Any]"
STAT, LIST, APPLY = f"{SERVICE}/Stat", f"{SERVICE}/List", f"{SERVICE}/Apply"
GETHINTS, UNASSIGN = f"{SERVICE}/GetHints", f"{SERVICE}/Unassign"

__all__ = ["SHARD_CAPABILITIES", "ShardHost", "ShardResolution", "ShardServicer",
           "add_shard_servicer"]


@dataclass
class ShardResolution:
    """Where a shard is served, as seen by this process.

    `status` is OK, SHARD_NOT_FOUND or NO_SHARD_PRIMARY (or NOT_SHARD_PRIMARY
    for a proxied request); `header` is the routed header answered to the
    caller. When OK, `replica` is the local primary replica, or None with
    `stub` a ShardStub of the primary to forward to. `proxy_metadata`, when
    set, replaces the caller's authorization on the forwarded call.
    """

    status: int
    header: pb.Header
    replica: object | None = None
    stub: Any = None
    proxy_metadata: Sequence[tuple[str, str]] | None = None


class ShardHost(Protocol):
    """What the Shard service needs of a consumer process (`root` has no trailing "/")."""

    etcd: aetcd.Client
    keyspace: KeySpace
    root: str
    process_id: pb.ProcessSpec.ID
    # A Journal stub, or a routing client with `stub_for(journal, primary=...)`,
    # used by Apply to check that recovery logs exist.
    journals: Any

    def resolve(self, shard: str, *, proxied_header: pb.Header | None
                ) -> ShardResolution | Awaitable[ShardResolution]:
        """Resolve `shard`; a proxied request waits for the header's etcd revision first."""
        ...

    async def stat(self, replica: Any, read_through: dict[str, int]
                   ) -> tuple[dict[str, int], dict[str, int]]:
        """(read_through, publish_at) once completed transactions reached `read_through`
        (only the shard's source journals, non-zero offsets); ShardStoppedError
        (api_errors) when the primary loop stops meanwhile."""
        ...


async def _abort(context: Context, exc: Exception, method: str) -> None:
    if isinstance(exc, grpc.aio.AbortError):
        raise exc  # the status is set already
    if isinstance(exc, ValidationError):
        exc = CodedError("INVALID_ARGUMENT", str(exc))
    await abort(context, exc, method)


def _caller_auth(context: Context) -> list[tuple[str, str]]:
    return [(str(k), str(v)) for k, v in (context.invocation_metadata() or ())
            if k == "authorization"]


class ShardServicer(cpb_grpc.ShardServicer):
    """Serves the Shard service of one consumer process."""

    def __init__(self, service: ShardHost) -> None:
        self.host = service

    async def Stat(self, request: cpb.StatRequest, context: Context) -> cpb.StatResponse:
        try:
            return await serve_stat(self.host, check(request, context, STAT),
                                    _caller_auth(context))
        except Exception as exc:
            await _abort(context, exc, STAT)
            raise

    async def List(self, request: cpb.ListRequest, context: Context) -> cpb.ListResponse:
        try:
            return await serve_list(self.host, check(request, context, LIST))
        except Exception as exc:
            await _abort(context, exc, LIST)
            raise

    async def Apply(self, request: cpb.ApplyRequest, context: Context) -> cpb.ApplyResponse:
        try:
            return await serve_apply(self.host, check(request, context, APPLY))
        except Exception as exc:
            await _abort(context, exc, APPLY)
            raise

    async def GetHints(self, request: cpb.GetHintsRequest, context: Context
                       ) -> cpb.GetHintsResponse:
        try:
            return await serve_get_hints(self.host, check(request, context, GETHINTS))
        except Exception as exc:
            await _abort(context, exc, GETHINTS)
            raise

    async def Unassign(self, request: cpb.UnassignRequest, context: Context
                       ) -> cpb.UnassignResponse:
        try:
            return await serve_unassign(self.host, check(request, context, UNASSIGN))
        except Exception as exc:
            await _abort(context, exc, UNASSIGN)
            raise


def add_shard_servicer(server: grpc.aio.Server, host: ShardHost) -> ShardServicer:
    """Register the Shard service of `host` on `server`, decoding requests tolerantly."""
    servicer = ShardServicer(host)
    add_tolerant(cpb_grpc.add_ShardServicer_to_server, servicer, server)
    return servicer
