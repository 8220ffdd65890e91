"""An in-memory Journal servicer for unit tests of the client layer.

It serves journals from bytearrays with the real stream shapes (metadata
before content, content chunks of at most 32736 bytes, List pages of 25
with a watch end-of-snapshot marker, paged ListFragments) and records every
request. Failures are scripted through its public attributes.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import grpc

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc

READ_CHUNK = 32736
LIST_PAGE = 25


def sha1_sum(data: bytes) -> pb.SHA1Sum:
    digest = hashlib.sha1(data).digest()
    return pb.SHA1Sum(
        part1=int.from_bytes(digest[0:8], "big"),
        part2=int.from_bytes(digest[8:16], "big"),
        part3=int.from_bytes(digest[16:20], "big"),
    )


def header(revision: int = 1) -> pb.Header:
    return pb.Header(
        process_id=pb.ProcessSpec.ID(zone="local", suffix="fake-broker"),
        route=pb.Route(primary=-1),
        etcd=pb.Header.Etcd(cluster_id=1, member_id=1, revision=revision, raft_term=1),
    )


@dataclass
class FakeJournal:
    content: bytearray = field(default_factory=bytearray)
    begin: int = 0  # Content below was "pruned": reads there jump forward.
    fragment_size: int = 1 << 30  # Reads announce fragments aligned to this size.


@dataclass
class Snapshot:
    revision: int
    journals: list[pb.ListResponse.Journal]


class FakeBroker(pb_grpc.JournalServicer):
    """A single in-process broker answering every RPC from memory."""

    def __init__(self) -> None:
        self.journals: dict[str, FakeJournal] = {}
        self.append_requests: list[list[pb.AppendRequest]] = []
        # Answered, in order, right after the first message of an Append.
        self.append_statuses: list[pb.Status.ValueType] = []
        self.read_requests: list[pb.ReadRequest] = []
        self.read_aborts = 0  # This many Read streams are aborted ...
        self.read_abort_after = 0  # ... with UNAVAILABLE after this many content bytes.
        self.list_requests: list[pb.ListRequest] = []
        self.list_journals: list[pb.ListResponse.Journal] = []
        self.list_status: pb.Status.ValueType = pb.OK
        self.watch_snapshots: list[Snapshot] = []
        self.watch_aborts = 0  # This many watch streams are aborted after one snapshot.
        self.apply_requests: list[pb.ApplyRequest] = []
        self.apply_status: pb.Status.ValueType = pb.OK
        self.fragments_requests: list[pb.FragmentsRequest] = []
        self.fragments: list[pb.FragmentsResponse._Fragment] = []
        # The Route and Etcd revision announced in Append and Read headers.
        self.route = pb.Route(primary=-1)
        self.revision = 1
        self._changed = asyncio.Condition()
        self._server: grpc.aio.Server | None = None
        self.address = ""

    async def start(self) -> None:
        self._server = grpc.aio.server()
        pb_grpc.add_JournalServicer_to_server(self, self._server)
        port = self._server.add_insecure_port("127.0.0.1:0")
        await self._server.start()
        self.address = f"127.0.0.1:{port}"

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop(None)

    def journal_header(self) -> pb.Header:
        resp = header(self.revision)
        resp.route.CopyFrom(self.route)
        return resp

    def add_journal(self, name: str, content: bytes = b"", **kwargs: int) -> FakeJournal:
        journal = self.journals[name] = FakeJournal(bytearray(content), **kwargs)
        return journal

    async def commit(self, name: str, content: bytes) -> tuple[int, int]:
        journal = self.journals[name]
        begin = len(journal.content)
        journal.content += content
        async with self._changed:
            self._changed.notify_all()
        return begin, len(journal.content)

    # Append ----------------------------------------------------------------

    async def Append(  # type: ignore[override]
        self, request_iterator: AsyncIterator[pb.AppendRequest], context: grpc.aio.ServicerContext
    ) -> pb.AppendResponse:
        messages: list[pb.AppendRequest] = []
        self.append_requests.append(messages)
        content = bytearray()
        intent = False
        async for req in request_iterator:
            messages.append(req)
            if len(messages) == 1:
                if self.append_statuses:
                    status = self.append_statuses.pop(0)
                    return pb.AppendResponse(status=status, header=self.journal_header())
            elif intent:
                await context.abort(grpc.StatusCode.UNKNOWN, "expected EOF after empty chunk")
            elif req.journal:
                await context.abort(grpc.StatusCode.UNKNOWN, "journal set on a follow-up message")
            elif not req.content:
                intent = True
            content += req.content
        if not intent:
            await context.abort(grpc.StatusCode.UNKNOWN, "append stream: unexpected EOF")
        return await self._commit_append(messages[0], bytes(content))

    async def _commit_append(self, first: pb.AppendRequest, content: bytes) -> pb.AppendResponse:
        journal = self.journals.get(first.journal)
        if journal is None:
            return pb.AppendResponse(status=pb.JOURNAL_NOT_FOUND, header=self.journal_header())
        if first.offset and first.offset != len(journal.content):
            return pb.AppendResponse(status=pb.WRONG_APPEND_OFFSET, header=self.journal_header())
        begin, end = await self.commit(first.journal, content)
        commit = pb.Fragment(
            journal=first.journal,
            begin=begin,
            end=end,
            sum=sha1_sum(content),
            compression_codec=pb.NONE,
        )
        chunks = sum(1 for _ in range(0, len(content), 1 << 17))
        return pb.AppendResponse(
            status=pb.OK, header=self.journal_header(), commit=commit, registers=pb.LabelSet(),
            total_chunks=chunks,
        )

    # Read ------------------------------------------------------------------

    async def Read(  # type: ignore[override]
        self, request: pb.ReadRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.ReadResponse]:
        self.read_requests.append(request)
        abort = self.read_aborts > 0
        self.read_aborts -= abort
        journal = self.journals.get(request.journal)
        if journal is None:
            yield pb.ReadResponse(status=pb.JOURNAL_NOT_FOUND, header=self.journal_header())
            return
        offset, first, sent = request.offset, True, 0
        while True:
            head = len(journal.content)
            offset = max(head if offset == -1 else offset, journal.begin)
            if offset >= head:
                if not request.block:
                    yield self._metadata(pb.OFFSET_NOT_YET_AVAILABLE, offset, head, None, first)
                    return
                async with self._changed:
                    await self._changed.wait()
                continue
            size = journal.fragment_size
            f_begin = journal.begin + (offset - journal.begin) // size * size
            frag = pb.Fragment(
                journal=request.journal, begin=f_begin, end=min(f_begin + size, head),
                compression_codec=pb.NONE,
            )
            yield self._metadata(pb.OK, offset, head, frag, first)
            first = False
            if request.metadata_only:
                return
            stop = frag.end if not request.end_offset else min(frag.end, request.end_offset)
            while offset < stop:
                n = min(READ_CHUNK, stop - offset)
                if abort and sent + n >= self.read_abort_after:
                    n = self.read_abort_after - sent
                    if n > 0:
                        yield self._content(journal, offset, n)
                    await context.abort(grpc.StatusCode.UNAVAILABLE, "fake broker: read cut")
                yield self._content(journal, offset, n)
                offset += n
                sent += n
            if request.end_offset and offset >= request.end_offset:
                return

    @staticmethod
    def _content(journal: FakeJournal, offset: int, n: int) -> pb.ReadResponse:
        return pb.ReadResponse(offset=offset, content=bytes(journal.content[offset : offset + n]))

    def _metadata(
        self, status: int, offset: int, head: int, frag: pb.Fragment | None, first: bool
    ) -> pb.ReadResponse:
        return pb.ReadResponse(
            status=status,  # type: ignore[arg-type]
            header=self.journal_header() if first else None,
            offset=offset,
            write_head=head,
            fragment=frag,
        )

    # Not used by clients ---------------------------------------------------

    async def Replicate(  # type: ignore[override]
        self,
        request_iterator: AsyncIterator[pb.ReplicateRequest],
        context: grpc.aio.ServicerContext,
    ) -> AsyncIterator[pb.ReplicateResponse]:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "fake broker: no Replicate")
        yield pb.ReplicateResponse()

    async def FragmentStoreHealth(  # type: ignore[override]
        self, request: pb.FragmentStoreHealthRequest, context: grpc.aio.ServicerContext
    ) -> pb.FragmentStoreHealthResponse:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "fake broker: no FragmentStoreHealth")
        return pb.FragmentStoreHealthResponse()

    # List / Apply / ListFragments ------------------------------------------

    async def List(  # type: ignore[override]
        self, request: pb.ListRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.ListResponse]:
        self.list_requests.append(request)
        if self.list_status != pb.OK:
            yield pb.ListResponse(status=self.list_status, header=header())
            return
        if not request.watch:
            for page in self._pages(1, self.list_journals):
                yield page
            return
        abort = self.watch_aborts > 0
        self.watch_aborts -= abort
        resume = request.watch_resume.etcd.revision
        for snapshot in self.watch_snapshots:
            if snapshot.revision <= resume:
                continue
            for page in self._pages(snapshot.revision, snapshot.journals):
                yield page
            yield pb.ListResponse()
            if abort:
                await context.abort(grpc.StatusCode.UNAVAILABLE, "fake broker: watch cut")
        await asyncio.Event().wait()  # Until the client cancels.

    @staticmethod
    def _pages(revision: int, journals: list[pb.ListResponse.Journal]) -> list[pb.ListResponse]:
        pages = [
            pb.ListResponse(status=pb.OK, header=header(revision), journals=journals[:LIST_PAGE])
        ]
        for start in range(LIST_PAGE, len(journals), LIST_PAGE):
            pages.append(pb.ListResponse(journals=journals[start : start + LIST_PAGE]))
        return pages

    async def Apply(  # type: ignore[override]
        self, request: pb.ApplyRequest, context: grpc.aio.ServicerContext
    ) -> pb.ApplyResponse:
        self.apply_requests.append(request)
        return pb.ApplyResponse(status=self.apply_status, header=header(7))

    async def ListFragments(  # type: ignore[override]
        self, request: pb.FragmentsRequest, context: grpc.aio.ServicerContext
    ) -> pb.FragmentsResponse:
        self.fragments_requests.append(request)
        if request.journal not in self.journals:
            return pb.FragmentsResponse(status=pb.JOURNAL_NOT_FOUND, header=header())
        limit = request.page_limit or 1000
        rest = [f for f in self.fragments if f.spec.begin >= request.next_page_token]
        token = rest[limit].spec.begin if len(rest) > limit else 0
        return pb.FragmentsResponse(
            status=pb.OK, header=header(), fragments=rest[:limit], next_page_token=token
        )
