"""Journal-level RPC helpers: List (once or watched), Apply, ListFragments, write heads.

List streams its snapshot in pages: the first message carries the status
and header, continuation messages only journals. These helpers hand back one
merged ListResponse per snapshot so callers never see the paging.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING

import grpc

from gazette_core.broker.client.backoff import Backoff
from gazette_core.broker.client.rpc_errors import check_status, from_rpc_error
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import GazetteError

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

DEFAULT_TIMEOUT = 30.0


def _first_page(resp: pb.ListResponse, resume: pb.Header | None) -> pb.ListResponse:
    """Check the opening message of a snapshot and start the merged copy from it."""
    check_status(resp.status)
    if resume is not None and resp.header.etcd.revision <= resume.etcd.revision:
        raise GazetteError(
            f"List watch: snapshot revision {resp.header.etcd.revision} is not newer "
            f"than the resumed revision {resume.etcd.revision}"
        )
    merged = pb.ListResponse()
    merged.CopyFrom(resp)
    return merged


async def list_journals(
    stub: JournalAsyncStub, selector: pb.LabelSelector, timeout: float = DEFAULT_TIMEOUT
) -> pb.ListResponse:
    """One snapshot of the journals matching `selector`, its pages merged."""
    call = stub.List(pb.ListRequest(selector=selector), timeout=timeout)
    merged: pb.ListResponse | None = None
    try:
        async for resp in call:
            if merged is None:
                merged = _first_page(resp, None)
            else:
                merged.journals.extend(resp.journals)
    except grpc.aio.AioRpcError as err:
        raise from_rpc_error(err, "List") from err
    if merged is None:
        raise GazetteError("List: broker closed the stream without a response")
    return merged


async def watch_journals(
    stub: JournalAsyncStub, selector: pb.LabelSelector
) -> AsyncGenerator[pb.ListResponse, None]:
    """Every snapshot of the journals matching `selector`, as the broker announces them.

    Runs until the consumer stops iterating (or cancels). Transport failures
    and closed streams are retried with back-off, resuming after the last
    snapshot seen so that a reconnect never hands back an older one.
    """
    resume: pb.Header | None = None
    backoff = Backoff()
    while True:
        request = pb.ListRequest(selector=selector, watch=True, watch_resume=resume)
        call = stub.List(request)
        pending: pb.ListResponse | None = None
        try:
            async for resp in call:
                if pending is None:
                    pending = _first_page(resp, resume)
                elif resp.ByteSize() == 0:  # An empty message ends the snapshot.
                    resume = pending.header
                    backoff.reset()
                    yield pending
                    pending = None
                else:
                    pending.journals.extend(resp.journals)
        except grpc.aio.AioRpcError as err:
            failure = from_rpc_error(err, "List watch")
            if not failure.retriable:
                raise failure from err
        finally:
            call.cancel()
        # A watch never ends on its own: a closed stream means the broker went away.
        await backoff.wait()


async def apply_journals(
    stub: JournalAsyncStub, req: pb.ApplyRequest, timeout: float = DEFAULT_TIMEOUT
) -> pb.ApplyResponse:
    """Apply a transaction of JournalSpec changes; non-OK statuses raise StatusError."""
    try:
        resp: pb.ApplyResponse = await stub.Apply(req, timeout=timeout)
    except grpc.aio.AioRpcError as err:
        raise from_rpc_error(err, "Apply") from err
    check_status(resp.status)
    return resp


async def list_fragments(
    stub: JournalAsyncStub, req: pb.FragmentsRequest, timeout: float = DEFAULT_TIMEOUT
) -> list[pb.FragmentsResponse._Fragment]:
    """Every fragment matching `req`, following next_page_token to the end.

    `timeout` bounds each page's RPC.
    """
    page = pb.FragmentsRequest()
    page.CopyFrom(req)
    fragments: list[pb.FragmentsResponse._Fragment] = []
    while True:
        try:
            resp: pb.FragmentsResponse = await stub.ListFragments(page, timeout=timeout)
        except grpc.aio.AioRpcError as err:
            raise from_rpc_error(err, "ListFragments") from err
        check_status(resp.status, req.journal)
        fragments.extend(resp.fragments)
        if resp.next_page_token == 0:
            return fragments
        page.next_page_token = resp.next_page_token


async def fetch_write_head(
    stub: JournalAsyncStub, journal: str, timeout: float = DEFAULT_TIMEOUT
) -> int:
    """The journal's current write head, from a metadata-only read at offset -1."""
    req = pb.ReadRequest(journal=journal, offset=-1, block=False, metadata_only=True)
    call = stub.Read(req, timeout=timeout)
    try:
        resp = await call.read()
    except grpc.aio.AioRpcError as err:
        raise from_rpc_error(err, "Read") from err
    finally:
        call.cancel()
    if resp is grpc.aio.EOF:
        raise GazetteError(f"Read of {journal!r}: broker closed the stream without a response")
    # At the head nothing is readable yet, so OFFSET_NOT_YET_AVAILABLE is the usual answer.
    if resp.status != pb.OFFSET_NOT_YET_AVAILABLE:
        check_status(resp.status, journal)
    return int(resp.write_head)
