"""Reader: one Read RPC, iterated as the journal's content chunks.

A Read stream interleaves metadata responses (status, header, offset,
write_head, fragment) with content responses (offset and content only).
Iteration yields just the content; the latest metadata stays available as
`.response`. Offset jumps (content pruned from the index, or offset -1
resolving to the write head) are followed and counted rather than failed.

Given a Router instead of a stub, the read goes straight to a member of the
journal's route. The request's `do_not_proxy` is left as the caller set it
(normally False): should the remembered route be stale, the broker reached
then forwards the read to a current member instead of refusing it, and the
header of its answer puts the router right for the next call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import grpc

from gazette_core.broker.client.routing import Target, target_for
from gazette_core.broker.client.rpc_errors import from_rpc_error
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import GazetteError, OffsetNotYetAvailable, StatusError

if TYPE_CHECKING:
    from gazette_core.broker.client.routing import JournalClient


class Reader:
    """Iterate the content of one Read RPC as `bytes` chunks.

    `stub` is a broker's stub or a Router (see the module docstring).
    `timeout` bounds the whole RPC; blocking reads usually leave it unset
    and are ended with `close()` or by cancelling the iterating task.
    `.target` tells where the RPC went once it is open.
    """

    def __init__(
        self, stub: JournalClient, request: pb.ReadRequest, timeout: float | None = None
    ) -> None:
        self._stub = stub
        self.target: Target | None = None
        self.request = pb.ReadRequest()
        self.request.CopyFrom(request)
        self._timeout = timeout
        self._call: grpc.aio.UnaryStreamCall | None = None
        self._offset = request.offset
        self.response = pb.ReadResponse()
        self.header: pb.Header | None = None
        self.skipped = 0  # Bytes passed over by offset jumps.

    @property
    def offset(self) -> int:
        """The next offset to read (-1 until the broker resolves a write-head read)."""
        return self._offset

    def __aiter__(self) -> Reader:
        return self

    async def __anext__(self) -> bytes:
        if self._call is None:
            self.target = target_for(self._stub, self.request.journal, primary=False)
            self._call = self.target.stub.Read(self.request, timeout=self._timeout)
        while True:
            try:
                resp = await self._call.read()
            except grpc.aio.AioRpcError as err:
                failure = from_rpc_error(err, f"Read of {self.request.journal!r}")
                if self.target is not None:
                    self.target.failed(failure)
                raise failure from err
            if resp is grpc.aio.EOF:
                raise StopAsyncIteration
            if resp.content:
                return self._on_content(resp)
            self._on_metadata(resp)

    def _on_content(self, resp: pb.ReadResponse) -> bytes:
        if resp.offset != self._offset:
            raise GazetteError(
                f"Read of {self.request.journal!r}: content at offset {resp.offset}, "
                f"expected {self._offset}"
            )
        content: bytes = resp.content
        self._offset += len(content)
        return content

    def _on_metadata(self, resp: pb.ReadResponse) -> None:
        self.response = resp
        header = resp.header if resp.HasField("header") else None
        if header is not None:
            self.header = header
        if self.target is not None:
            self.target.answered(resp.status, header)
        journal = self.request.journal
        if resp.status == pb.OFFSET_NOT_YET_AVAILABLE:
            self._advance(resp.offset)
            raise OffsetNotYetAvailable(journal, resp.offset, resp.write_head)
        if resp.status != pb.OK:
            raise StatusError(resp.status, "", journal)
        self._advance(resp.offset)

    def _advance(self, offset: int) -> None:
        """Move to the broker's effective offset, counting bytes skipped by a jump."""
        if self._offset == -1:
            self._offset = offset  # The write head the broker resolved -1 to.
        elif offset > self._offset:
            self.skipped += offset - self._offset
            self._offset = offset
        elif offset < self._offset:
            raise GazetteError(
                f"Read of {self.request.journal!r}: metadata offset {offset} is before "
                f"the requested offset {self._offset}"
            )

    def close(self) -> None:
        """Abort the RPC (safe to call more than once)."""
        if self._call is not None:
            self._call.cancel()

    async def __aenter__(self) -> Reader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()
