"""RetryReader: a journal read that survives broker restarts and route changes.

It runs a chain of Readers, each resuming at the offset the previous one
reached, so content is neither lost nor repeated across reconnects. A
non-blocking read ends cleanly at the write head, which is how a one-shot
`gazctl journals read` knows it is done.

Given a Router, each Reader of the chain is dispatched afresh: the first to
a member of the remembered route, and after a failure there (which makes the
router forget the route) to the default broker. `do_not_proxy` stays as the
caller set it, so a stale route still reaches the content through a proxy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gazette_core.broker.client.backoff import Backoff
from gazette_core.broker.client.reader import Reader
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import GazetteError, OffsetNotYetAvailable

if TYPE_CHECKING:
    from gazette_core.broker.client.routing import JournalClient


class RetryReader:
    """Iterate a journal's content as `bytes`, reconnecting on retriable failures.

    `stub` is a broker's stub or a Router (see the module docstring).
    `.offset`, `.response` (latest metadata), `.header` and `.skipped`
    (bytes passed over by offset jumps) describe the read so far.
    """

    def __init__(
        self, stub: JournalClient, request: pb.ReadRequest, backoff: Backoff | None = None
    ) -> None:
        self._stub = stub
        self.request = pb.ReadRequest()
        self.request.CopyFrom(request)
        self._backoff = backoff or Backoff()
        self._reader: Reader | None = None
        self._done = False
        self._skipped_before = 0
        self.offset = request.offset
        self.response = pb.ReadResponse()
        self.header: pb.Header | None = None
        self.skipped = 0
        self.write_head: int | None = None  # Known once a non-blocking read reached it.

    def __aiter__(self) -> RetryReader:
        return self

    async def __anext__(self) -> bytes:
        while not self._done:
            reader = self._reader or self._open()
            try:
                chunk = await reader.__anext__()
            except StopAsyncIteration:
                self._retire(reader)
                self._done = self._finished()
            except OffsetNotYetAvailable as err:
                self._retire(reader)
                self.write_head = err.write_head
                self._done = not self.request.block
            except GazetteError as err:
                self._retire(reader)
                if not err.retriable:
                    self._done = True
                    raise
            else:
                self._sync(reader)
                self._backoff.reset()
                return chunk
            if not self._done:
                await self._backoff.wait()
        raise StopAsyncIteration

    def _open(self) -> Reader:
        request = pb.ReadRequest()
        request.CopyFrom(self.request)
        request.offset = self.offset
        self._reader = Reader(self._stub, request)
        return self._reader

    def _sync(self, reader: Reader) -> None:
        self.offset = reader.offset
        self.response = reader.response
        self.header = reader.header
        self.skipped = self._skipped_before + reader.skipped

    def _retire(self, reader: Reader) -> None:
        """Take over the final state of a reader whose stream has ended."""
        self._sync(reader)
        self._skipped_before = self.skipped
        reader.close()
        self._reader = None

    def _finished(self) -> bool:
        """Whether a cleanly closed stream completed the read (else it was cut short)."""
        req = self.request
        if req.metadata_only or (req.end_offset and self.offset >= req.end_offset):
            return True
        if req.do_not_proxy and self.response.fragment_url:
            raise GazetteError(
                f"Read of {req.journal!r}: fragment {self.response.fragment_url} must be "
                "fetched directly, which this reader does not support"
            )
        return False

    def close(self) -> None:
        """Stop reading and abort any open RPC."""
        self._done = True
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    async def __aenter__(self) -> RetryReader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


async def read_all(stub: JournalClient, journal: str, offset: int = 0) -> bytes:
    """The journal's content from `offset` up to its current write head."""
    content = bytearray()
    async with RetryReader(stub, pb.ReadRequest(journal=journal, offset=offset)) as reader:
        async for chunk in reader:
            content += chunk
    return bytes(content)
