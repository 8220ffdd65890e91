"""Client calls of the Shard service: list, apply, stat, hints and unassign.

Each takes a consumer endpoint (`http://host:port`, dialed with the shared
channel cache, TLS and authorization of `broker.client.channel`), a channel,
or a Shard stub. A response status other than OK raises the typed error of
`errors` (ShardNotFoundError, EtcdTransactionFailedError, ...); a failed
call raises UnavailableError (retriable) or RPCError, never a gRPC error.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeAlias, TypeVar

import grpc

from gazette_core.broker.client.channel import ClientConfig, dial
from gazette_core.broker.client.rpc_errors import from_rpc_error
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.labels_ext import parse_selector
from gazette_core.broker.protocol.validate_spec_ext import within
from gazette_core.consumer.api.errors import check_shard_status
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol import consumer_pb2_grpc as cpb_grpc
from gazette_core.consumer.protocol.rpc_ext import validate_list_response_shard

DEFAULT_TIMEOUT = 30.0
Target: TypeAlias = "str | grpc.aio.Channel | cpb_grpc.ShardStub"
R = TypeVar("R")


def shard_stub(target: Target, config: ClientConfig | None = None) -> Any:
    """A Shard stub for an endpoint URL, a channel, or the stub itself."""
    if isinstance(target, cpb_grpc.ShardStub):
        return target
    channel = dial(target, config) if isinstance(target, str) else target
    return cpb_grpc.ShardStub(channel)


async def _call(what: str, method: Callable[..., Awaitable[R]], request: Any,
                timeout: float | None) -> R:
    try:
        return await method(request, timeout=timeout)
    except grpc.aio.AioRpcError as err:
        raise from_rpc_error(err, what) from err


def _selector(selector: pb.LabelSelector | str | None) -> pb.LabelSelector:
    if selector is None:
        return pb.LabelSelector()
    return parse_selector(selector) if isinstance(selector, str) else selector


async def list_shards(target: Target, selector: pb.LabelSelector | str | None = None, *,
                      timeout: float | None = DEFAULT_TIMEOUT) -> cpb.ListResponse:
    """The shards matching `selector` (a LabelSelector or its text form), with routes."""
    stub = shard_stub(target)
    resp: cpb.ListResponse = await _call("Shard List", stub.List,
                                         cpb.ListRequest(selector=_selector(selector)), timeout)
    check_shard_status(resp.status)
    for index, listed in enumerate(resp.shards):
        with within(f"shards[{index}]"):
            validate_list_response_shard(listed)
    return resp


async def apply_shards(target: Target, changes: Iterable[cpb.ApplyRequest.Change], *,
                       timeout: float | None = DEFAULT_TIMEOUT) -> cpb.ApplyResponse:
    """Apply `changes` in one transaction; EtcdTransactionFailedError on a stale revision."""
    stub = shard_stub(target)
    resp: cpb.ApplyResponse = await _call("Shard Apply", stub.Apply,
                                          cpb.ApplyRequest(changes=list(changes)), timeout)
    check_shard_status(resp.status)
    return resp


async def stat_shard(target: Target, shard: str, read_through: Mapping[str, int] | None = None,
                     *, timeout: float | None = DEFAULT_TIMEOUT) -> cpb.StatResponse:
    """The shard's progress once it has read through `read_through` (source offsets)."""
    stub = shard_stub(target)
    req = cpb.StatRequest(shard=shard, read_through=dict(read_through or {}))
    resp: cpb.StatResponse = await _call("Shard Stat", stub.Stat, req, timeout)
    check_shard_status(resp.status, shard)
    return resp


async def get_hints(target: Target, shard: str, *,
                    timeout: float | None = DEFAULT_TIMEOUT) -> cpb.GetHintsResponse:
    """The shard's primary and backup FSMHints (backups newest first)."""
    stub = shard_stub(target)
    resp: cpb.GetHintsResponse = await _call("Shard GetHints", stub.GetHints,
                                             cpb.GetHintsRequest(shard=shard), timeout)
    check_shard_status(resp.status, shard)
    return resp


async def unassign(target: Target, shards: Iterable[str], *, only_failed: bool = False,
                   dry_run: bool = False, timeout: float | None = DEFAULT_TIMEOUT) -> list[str]:
    """Remove failed (and, unless `only_failed`, primary) assignments; the shards touched."""
    stub = shard_stub(target)
    req = cpb.UnassignRequest(shards=list(shards), only_failed=only_failed, dry_run=dry_run)
    resp: cpb.UnassignResponse = await _call("Shard Unassign", stub.Unassign, req, timeout)
    check_shard_status(resp.status)
    return list(resp.shards)
