"""One raw etcd Watch stream over a key prefix.

aetcd's watcher hides response headers and progress notifications, which the
KeySpace needs to know which revision it reflects, so this drives the
bidirectional Watch RPC directly.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import TracebackType

import aetcd
import grpc
from aetcd import rpc

from gazette_core.errors import GazetteError, UnavailableError
from gazette_core.keyspace.etcd_util import prefix_range_end, reaching_etcd


class WatchCompactedError(GazetteError):
    """The watch's start revision was compacted away; the caller must re-load."""

    def __init__(self, compact_revision: int) -> None:
        self.compact_revision = compact_revision
        super().__init__(f"watch revision compacted (compact revision {compact_revision})")


class WatchStream:
    """Watch every key under `prefix` from `start_revision`; iterate for responses."""

    def __init__(self, client: aetcd.Client, prefix: str, start_revision: int) -> None:
        self._client = client
        self._prefix = prefix.encode()
        self._start_revision = start_revision
        self._call: grpc.aio.StreamStreamCall | None = None

    async def __aenter__(self) -> WatchStream:
        with reaching_etcd():
            await self._client.connect()
            stub = rpc.WatchStub(self._client.channel)
            self._call = stub.Watch(metadata=self._client.metadata)
            create = rpc.WatchCreateRequest(
                key=self._prefix,
                range_end=prefix_range_end(self._prefix),
                start_revision=self._start_revision,
                progress_notify=True,
            )
            await self._call.write(rpc.WatchRequest(create_request=create))
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        call, self._call = self._call, None
        if call is not None:
            call.cancel()

    async def __aiter__(self) -> AsyncIterator[rpc.WatchResponse]:
        """Responses in order; raises when the stream ends, is canceled or compacted.

        A stream etcd stops answering raises EtcdUnavailableError.
        """
        while self._call is not None:
            with reaching_etcd():
                resp = await self._call.read()
            if resp is grpc.aio.EOF:
                raise UnavailableError("etcd watch stream ended")
            if resp.compact_revision:
                raise WatchCompactedError(resp.compact_revision)
            if resp.canceled:
                raise UnavailableError(f"etcd watch canceled: {resp.cancel_reason}")
            yield resp
