"""The host the Shard RPC handlers serve from, as a protocol: what they need of a process.

The handlers (`stat`, `list`, `apply`, `hints`) and the `servicer` see a
consumer process only through `ShardHost`, so none of them imports the
concrete `consumer.service`; `ShardResolution` is what the host answers
when asked where a shard is served.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import aetcd

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.keyspace.keyspace import KeySpace


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
        (`errors`) when the primary loop stops meanwhile."""
        ...
