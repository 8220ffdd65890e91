"""The Shard Stat RPC: resolve the shard, proxy to its primary, or report progress.

A request without a header that lands on a non-primary is forwarded to the
primary with the resolved header attached (and the caller's authorization);
a forwarded request (it has a header) that lands on a non-primary is answered
NOT_SHARD_PRIMARY rather than forwarded again. On the primary the host waits
for the requested read-through offsets of the shard's source journals (zero
offsets are ignored) and returns the shard's progress. A journal that is not
a source of the shard is refused (INVALID_ARGUMENT naming it) wherever the
request lands: no offset of it is ever reached, so answering at once would
tell the caller it had been.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from gazette_core.broker.protocol.names_ext import quote
from gazette_core.consumer.api.authz import id_visible
from gazette_core.consumer.api.errors import ShardStatusError
from gazette_core.consumer.api.hints import shard_spec
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol.rpc_ext import validate_stat_request
from gazette_core.errors import ValidationError

if TYPE_CHECKING:
    from gazette_core.consumer.api.host import ShardHost, ShardResolution

Metadata = Sequence[tuple[str, str]]


def _status(status: int) -> cpb.Status.ValueType:
    return cast("cpb.Status.ValueType", status)


async def resolve(host: ShardHost, shard: str, proxied: bool, header: object
                  ) -> ShardResolution:
    """`host.resolve`, which may be a plain function or a coroutine function."""
    res = host.resolve(shard, proxied_header=header if proxied else None)  # type: ignore[arg-type]
    return await res if inspect.isawaitable(res) else res


def _source_offsets(host: ShardHost, req: cpb.StatRequest) -> dict[str, int]:
    """The requested offsets worth waiting for: non-zero ones (all of sources, see
    `_check_sources`)."""
    return {j: offset for j, offset in req.read_through.items() if offset}


def _check_sources(host: ShardHost, req: cpb.StatRequest) -> None:
    """ValidationError naming the first requested journal that is not a source."""
    spec = shard_spec(host, req.shard)
    sources = {source.journal for source in spec.sources} if spec is not None else set()
    for journal in sorted(req.read_through):
        if journal not in sources:
            raise ValidationError(
                f"read_through[{journal}]",
                f"journal {quote(journal)} is not a source of shard {quote(req.shard)}",
            )


async def serve_stat(host: ShardHost, req: cpb.StatRequest, caller_auth: Metadata
                     ) -> cpb.StatResponse:
    """Answer one Stat RPC; `caller_auth` is the caller's authorization metadata."""
    validate_stat_request(req)
    proxied = req.HasField("header")
    res = await resolve(host, req.shard, proxied, req.header)
    if res.status == cpb.OK and not id_visible(req.shard):
        return cpb.StatResponse(status=cpb.SHARD_NOT_FOUND, header=res.header)
    if res.status != cpb.OK:
        return cpb.StatResponse(status=_status(res.status), header=res.header)
    _check_sources(host, req)
    if res.replica is None:
        if proxied or res.stub is None:
            return cpb.StatResponse(status=cpb.NOT_SHARD_PRIMARY, header=res.header)
        forwarded = cpb.StatRequest()
        forwarded.CopyFrom(req)
        forwarded.header.CopyFrom(res.header)
        metadata = res.proxy_metadata if res.proxy_metadata is not None else caller_auth
        answer: cpb.StatResponse = await res.stub.Stat(forwarded, metadata=tuple(metadata))
        return answer
    try:
        read_through, publish_at = await host.stat(res.replica, _source_offsets(host, req))
    except ShardStatusError as exc:
        return cpb.StatResponse(status=_status(exc.status), header=res.header)
    return cpb.StatResponse(status=cpb.OK, header=res.header, read_through=read_through,
                            publish_at=publish_at)
