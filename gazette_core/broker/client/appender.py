"""append(): one atomic Append RPC.

The stream shape is fixed by the broker: a first message naming the journal
and options with no content, content messages, one empty message declaring
the intent to commit, then a half-close. A stream that ends any other way
(including cancellation of the calling task) is rolled back by the broker,
so nothing of a failed append becomes visible.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, AsyncIterator, Iterable
from typing import TYPE_CHECKING

import grpc

from gazette_core.broker.client.backoff import Backoff
from gazette_core.broker.client.call_status import StatusKeeper
from gazette_core.broker.client.metrics import APPEND_BYTES
from gazette_core.broker.client.routing import target_for
from gazette_core.broker.client.rpc_errors import from_rpc_error
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import AppendError, GazetteError
from gazette_core.metrics.families import Cell

if TYPE_CHECKING:
    from gazette_core.broker.client.routing import JournalClient

# Per-message cost dominates gRPC throughput, so content travels in large
# chunks, yet below the sizes where allocator churn sets in.
CHUNK_SIZE = 128 * 1024
DEFAULT_TIMEOUT = 60.0

Content = bytes | bytearray | memoryview | AsyncIterable[bytes] | Iterable[bytes]


def _split(data: bytes | bytearray | memoryview) -> Iterable[bytes]:
    view = memoryview(data)
    for start in range(0, len(view), CHUNK_SIZE):
        yield bytes(view[start : start + CHUNK_SIZE])


def _coalesce(pieces: Iterable[bytes]) -> Iterable[bytes]:
    """Full chunks from many small pieces that are all available up front."""
    buf = bytearray()
    for piece in pieces:
        buf += piece
        if len(buf) >= CHUNK_SIZE:
            whole = len(buf) - len(buf) % CHUNK_SIZE
            yield from _split(memoryview(buf)[:whole])
            del buf[:whole]
    if buf:
        yield bytes(buf)


async def _chunks(data: Content) -> AsyncIterator[bytes]:
    """Non-empty content chunks of at most CHUNK_SIZE bytes.

    Pieces of an async source are forwarded as they arrive rather than held
    back to fill a chunk: the broker aborts appends that stall.
    """
    if isinstance(data, bytes | bytearray | memoryview):
        for chunk in _split(data):
            yield chunk
    elif isinstance(data, AsyncIterable):
        async for piece in data:
            for chunk in _split(piece):
                yield chunk
    else:
        for chunk in _coalesce(data):
            yield chunk


def _first_request(
    journal: str,
    offset: int,
    check_registers: pb.LabelSelector | None,
    union_registers: pb.LabelSet | None,
    subtract_registers: pb.LabelSet | None,
    suspend: int,
) -> pb.AppendRequest:
    return pb.AppendRequest(
        journal=journal,
        offset=offset,
        check_registers=check_registers,
        union_registers=union_registers,
        subtract_registers=subtract_registers,
        suspend=suspend,  # type: ignore[arg-type]
    )


async def _send(call: grpc.aio.StreamUnaryCall, first: pb.AppendRequest, data: Content,
                sent: Cell) -> None:
    """Write the whole request stream, stopping early if the broker already answered;
    count the content bytes written into `sent`."""
    try:
        await call.write(first)
        if isinstance(data, bytes) and len(data) <= CHUNK_SIZE:
            if data:  # one chunk, the common small append: no generator to step through
                await call.write(pb.AppendRequest(content=data))
                sent.value += len(data)
        else:
            async for chunk in _chunks(data):
                await call.write(pb.AppendRequest(content=chunk))
                sent.value += len(chunk)
        await call.write(pb.AppendRequest())  # Commit intent.
    except (asyncio.InvalidStateError, grpc.aio.AioRpcError):
        # The broker may answer (e.g. JOURNAL_NOT_FOUND) before reading the whole
        # stream, which fails our next write with a generic error. Awaiting the
        # call yields that response, or the RPC's real error if there was one.
        return
    await call.done_writing()


async def append(
    stub: JournalClient,
    journal: str,
    data: Content,
    *,
    offset: int = 0,
    check_registers: pb.LabelSelector | None = None,
    union_registers: pb.LabelSet | None = None,
    subtract_registers: pb.LabelSet | None = None,
    suspend: int = pb.AppendRequest.SUSPEND_RESUME,
    timeout: float = DEFAULT_TIMEOUT,
) -> pb.AppendResponse:
    """Append `data` to `journal` atomically and return the broker's response.

    `stub` is a broker's stub, or a Router that sends the append straight to
    the journal's primary and learns from the response header.

    Raises AppendError (a StatusError carrying `.response`) on a non-OK
    status, UnavailableError or RPCError when the RPC itself fails.
    """
    first = _first_request(
        journal, offset, check_registers, union_registers, subtract_registers, suspend
    )
    target = target_for(stub, journal, primary=True)
    call = target.stub.Append(timeout=timeout)
    status = StatusKeeper(call)
    try:
        await _send(call, first, data, APPEND_BYTES.cell(journal))
        resp: pb.AppendResponse = await call
    except grpc.aio.AioRpcError as err:
        failure = from_rpc_error(status.error(err), f"Append to {journal!r}")
        target.failed(failure)
        raise failure from err
    except BaseException:
        # Aborting without the commit message makes the broker roll back.
        call.cancel()
        raise
    target.answered(resp.status, resp.header)
    if resp.status != pb.OK:
        raise AppendError(resp, journal)
    return resp


async def append_retrying(
    stub: JournalClient,
    journal: str,
    data: bytes,
    *,
    deadline: float = 30.0,
    timeout: float = DEFAULT_TIMEOUT,
    check_registers: pb.LabelSelector | None = None,
    union_registers: pb.LabelSet | None = None,
) -> pb.AppendResponse:
    """Append `data`, retrying retriable failures (no primary yet, broker restarting).

    Safe because brokers answer those statuses before accepting any content,
    and a failed RPC commits nothing. Gives up with the last error after
    `deadline` seconds. Through a Router, a retry after a failure at the
    routed broker goes to the default broker, which knows the current route.
    """
    backoff = Backoff()
    loop = asyncio.get_running_loop()
    give_up = loop.time() + deadline
    while True:
        try:
            return await append(stub, journal, data, timeout=timeout,
                                check_registers=check_registers,
                                union_registers=union_registers)
        except GazetteError as exc:
            delay = backoff.next_delay()
            if not exc.retriable or loop.time() + delay > give_up:
                raise
            await asyncio.sleep(delay)
