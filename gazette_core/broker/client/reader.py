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

With `do_not_proxy`, a broker sends only the metadata of a persisted
fragment: the Reader then reads it from its `fragment_url` (client/direct.py)
and ends once the fragment does; a RetryReader continues with the next RPC.
A failed direct read raises DirectReadError, after which the fragment can be
read through the broker instead.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING

import grpc

from gazette_core.broker.client.direct import read_direct
from gazette_core.broker.client.metrics import READ_BYTES
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
    `.target` tells where the RPC went once it is open. `file_root` (the
    brokers' `--broker.file-root`) makes `file://` fragment URLs readable.
    """

    def __init__(
        self, stub: JournalClient, request: pb.ReadRequest, timeout: float | None = None,
        file_root: str | None = None,
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
        self._file_root = file_root
        self._direct: AsyncGenerator[bytes, None] | None = None
        self.read_directly = False  # Whether a fragment came from its fragment_url.
        self._read_bytes = READ_BYTES.cell(request.journal)

    @property
    def offset(self) -> int:
        """The next offset to read (-1 until the broker resolves a write-head read)."""
        return self._offset

    def __aiter__(self) -> Reader:
        return self

    async def __anext__(self) -> bytes:
        if self._direct is not None:
            return await self._next_direct()
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
            if self._left_to_us(resp):
                self._direct = read_direct(resp.fragment, resp.fragment_url, self._offset,
                                           self._file_root)
                return await self._next_direct()

    def _left_to_us(self, resp: pb.ReadResponse) -> bool:
        """Whether the broker sends no content for this fragment: do_not_proxy and persisted."""
        frag = resp.fragment
        return (self.request.do_not_proxy and bool(resp.fragment_url)
                and bool(frag.backing_store) and frag.mod_time != 0 and frag.end > self._offset)

    async def _next_direct(self) -> bytes:
        """The next chunk of the directly read fragment, cut at the request's end_offset."""
        assert self._direct is not None
        end = self.request.end_offset
        try:
            if end and self._offset >= end:
                raise StopAsyncIteration
            chunk = await anext(self._direct)
        except BaseException:
            # Done with the fragment, or failed: either way this RPC (over which the
            # broker sends nothing more) ends here, and a RetryReader resumes at the
            # offset reached.
            await self._end_direct()
            raise
        chunk = chunk[:end - self._offset] if end else chunk
        self._offset += len(chunk)
        self._read_bytes.value += len(chunk)
        self.read_directly = True
        return chunk

    async def _end_direct(self) -> None:
        direct, self._direct = self._direct, None
        if direct is not None:
            await direct.aclose()
        self.close()

    def _on_content(self, resp: pb.ReadResponse) -> bytes:
        if resp.offset != self._offset:
            raise GazetteError(
                f"Read of {self.request.journal!r}: content at offset {resp.offset}, "
                f"expected {self._offset}"
            )
        content: bytes = resp.content
        self._offset += len(content)
        self._read_bytes.value += len(content)
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
