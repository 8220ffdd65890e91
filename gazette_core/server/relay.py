"""Relaying a connection's bytes both ways between two sockets, on the event loop.

Each socket gets an asyncio transport whose protocol writes what it
receives to the other: a full write buffer pauses reading on the other side
(back-pressure), and either side's end of stream, reset or error closes the
other one after writing what it still holds. After an error that write may
take at most LINGER seconds: a reset passed on as a reset would turn the
gRPC server's refusal (a TLS alert, then a close over unread bytes on its
unix socket) into "connection reset" at the client instead of the refusal.

Relaying in threads by splice(2) was measured too (bench/front_bench.py):
as fast while the event loop idles, but once the loop is busy with Python
work every chunk waits for the GIL, and small calls' p99 latency grows
tenfold and more. On the loop, the relay costs a little loop time per chunk
and keeps within a few tens of percent of direct gRPC either way.
"""

from __future__ import annotations

import asyncio
import socket

# Write buffering of each side before its source is paused.
HIGH_WATER = 1 << 20
# How long a side whose peer failed may take to write out what it holds.
LINGER = 5.0


async def relay(client: socket.socket, upstream: socket.socket) -> None:
    """Relay until both directions have ended; cancelling tears the connection down.

    Both sockets belong to the relay from here on and are closed when it returns.
    """
    loop = asyncio.get_running_loop()
    ended = loop.create_future()
    a, b = _Half(ended), _Half(ended)
    a.peer, b.peer = b, a
    try:
        await loop.connect_accepted_socket(lambda: b, upstream)
        await loop.connect_accepted_socket(lambda: a, client)
    except BaseException:
        b.abort()
        client.close()
        upstream.close()
        raise
    a.resume()
    b.resume()
    try:
        await asyncio.shield(ended)
    finally:
        a.abort()
        b.abort()


class _Half(asyncio.Protocol):
    """One socket's side: what it reads goes to its peer's transport."""

    def __init__(self, ended: asyncio.Future[None]) -> None:
        self.peer: _Half
        self.transport: asyncio.Transport | None = None
        self._ended = ended
        self._lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.set_write_buffer_limits(high=HIGH_WATER)
        transport.pause_reading()  # until the peer is connected too

    def resume(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.resume_reading()

    def data_received(self, data: bytes) -> None:
        assert self.peer.transport is not None
        self.peer.transport.write(data)

    def pause_writing(self) -> None:
        if self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        self.peer.resume()

    def eof_received(self) -> bool:
        # HTTP/2 ends streams with frames, never by half-closing: either side's end
        # of stream ends the connection, once what it sent has been passed on.
        self.peer.close()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self.peer.close()
        if exc is not None and not self.peer._lost:
            asyncio.get_running_loop().call_later(LINGER, self.peer.abort)
        if self.peer._lost and not self._ended.done():
            self._ended.set_result(None)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        else:
            self.abort()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()
        elif not self._lost:
            self._lost = True
            if self.peer._lost and not self._ended.done():
                self._ended.set_result(None)
