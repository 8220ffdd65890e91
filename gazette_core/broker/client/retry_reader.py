"""RetryReader: a journal read that survives broker restarts and route changes.

It runs a chain of Readers, each resuming at the offset the previous one
reached, so content is neither lost nor repeated across reconnects. A
non-blocking read ends cleanly at the write head, which is how a one-shot
`gazctl journals read` knows it is done.

Given a Router, each Reader of the chain is dispatched afresh: the first to
a member of the remembered route, and after a failure there (which makes the
router forget the route) to the default broker. `do_not_proxy` stays as the
caller set it, so a stale route still reaches the content through a proxy,
except that a Router made for `direct_reads` sets it on every read (a broker
refusing it names the current route, which the next Reader takes) and lends
its `file_root`.

With `do_not_proxy`, persisted fragments are read straight from their stores
(see reader.py). Should that fail, the rest of that fragment is read through
the broker (a Reader without `do_not_proxy`, ending at the fragment's end),
from the exact offset the direct read reached.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from gazette_core.broker.client.backoff import Backoff
from gazette_core.broker.client.direct import DirectReadError
from gazette_core.broker.client.reader import Reader
from gazette_core.broker.client.routing import Router
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import GazetteError, OffsetNotYetAvailable

if TYPE_CHECKING:
    from gazette_core.broker.client.routing import JournalClient

log = logging.getLogger(__name__)


class RetryReader:
    """Iterate a journal's content as `bytes`, reconnecting on retriable failures.

    `stub` is a broker's stub or a Router (see the module docstring).
    `.offset`, `.response` (latest metadata), `.header` and `.skipped`
    (bytes passed over by offset jumps) describe the read so far. `file_root`
    makes `file://` fragment URLs readable directly (see Reader).
    """

    def __init__(
        self, stub: JournalClient, request: pb.ReadRequest, backoff: Backoff | None = None,
        file_root: str | None = None,
    ) -> None:
        self._stub = stub
        self.request = pb.ReadRequest()
        self.request.CopyFrom(request)
        if isinstance(stub, Router) and stub.direct_reads:
            self.request.do_not_proxy = True
            file_root = stub.file_root if file_root is None else file_root
        self._backoff = backoff or Backoff()
        self._reader: Reader | None = None
        self._done = False
        self._skipped_before = 0
        self.offset = request.offset
        self.response = pb.ReadResponse()
        self.header: pb.Header | None = None
        self.skipped = 0
        self.write_head: int | None = None  # Known once a non-blocking read reached it.
        self._file_root = file_root
        # After a failed direct read, offsets below this are read through the broker.
        self._via_broker_until = 0

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
                if self._handed_off(reader):
                    continue  # It ended with a fragment, not for a failure: go on at once.
            except DirectReadError as err:
                self._retire(reader)
                self._via_broker_until = err.fragment.end
                log.warning("%s; reading it through the broker", err)
                continue  # Nothing is wrong with the broker: no back-off.
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
        if self._via_broker_until > self.offset >= 0:
            # The broker streams what the store would not give, up to the fragment's end.
            request.do_not_proxy = False
            request.end_offset = min(request.end_offset or self._via_broker_until,
                                     self._via_broker_until)
        self._reader = Reader(self._stub, request, file_root=self._file_root)
        return self._reader

    def _handed_off(self, reader: Reader) -> bool:
        """Whether `reader` ended after a fragment read from its store, or after reading
        a fragment through the broker once reading it from its store had failed."""
        return reader.read_directly or 0 < self._via_broker_until == reader.offset

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
        return bool(req.metadata_only or (req.end_offset and self.offset >= req.end_offset))

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
