"""Telling a new connection's protocol from its first bytes, without consuming them.

A cleartext gRPC client opens with the HTTP/2 client preface; anything else
is taken for HTTP/1.x. Over TLS the ClientHello says it: a client offering
ALPN "h2" and not "http/1.1" is a gRPC client (gRPC's own clients offer only
h2), while browsers and curl, which offer both, are HTTP clients and are
served HTTP/1.1. The bytes are peeked (MSG_PEEK), so whoever the connection
is handed to reads it from its first byte.
"""

from __future__ import annotations

import asyncio
import enum
import socket

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
# A ClientHello fits one TLS record (at most 16 KiB of payload) in practice.
MAX_PEEK = 5 + (1 << 14)
_TLS_HANDSHAKE = 0x16
_CLIENT_HELLO = 0x01
_ALPN_EXTENSION = 0x0010
# A partly arrived opening is peeked again after this, doubling up to the cap.
_RETRY_S, _RETRY_CAP_S = 0.001, 0.05


class Kind(enum.Enum):
    GRPC = "grpc"
    HTTP = "http"
    CLOSED = "closed"


async def sniff(sock: socket.socket, tls: bool) -> Kind:
    """What `sock` speaks, once its first bytes tell (the caller bounds the wait)."""
    loop = asyncio.get_running_loop()
    retry = _RETRY_S
    while True:
        await _readable(loop, sock)
        data = sock.recv(MAX_PEEK, socket.MSG_PEEK)
        if not data:
            return Kind.CLOSED
        kind = classify(data, tls)
        if kind is not None:
            return kind
        # Readable stays true while a partial opening waits in the buffer: poll, not spin.
        await asyncio.sleep(retry)
        retry = min(retry * 2, _RETRY_CAP_S)


async def _readable(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> None:
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(sock.fileno(), wake)
    try:
        await ready
    finally:
        loop.remove_reader(sock.fileno())


def classify(data: bytes, tls: bool) -> Kind | None:
    """The protocol `data` (a connection's opening bytes) begins, or None when more must come."""
    if tls:
        return _classify_tls(data)
    n = min(len(data), len(PREFACE))
    if data[:n] != PREFACE[:n]:
        return Kind.HTTP
    return Kind.GRPC if len(data) >= len(PREFACE) else None


def _classify_tls(data: bytes) -> Kind | None:
    if data[0] != _TLS_HANDSHAKE:
        return Kind.HTTP  # not TLS: the HTTP server's handshake refuses it
    if len(data) < 5:
        return None
    end = min(5 + int.from_bytes(data[3:5], "big"), MAX_PEEK)
    if len(data) < end:
        return None
    offered = alpn_offered(data[5:end])
    return Kind.GRPC if "h2" in offered and "http/1.1" not in offered else Kind.HTTP


def alpn_offered(hello: bytes) -> list[str]:
    """The ALPN protocols a ClientHello handshake message offers ([] when none or malformed)."""
    try:
        return _alpn(hello)
    except (IndexError, ValueError):
        return []


def _alpn(hello: bytes) -> list[str]:
    if hello[0] != _CLIENT_HELLO:
        return []
    at = 4 + 2 + 32  # type and length, client version, random
    at += 1 + hello[at]  # session id
    at += 2 + int.from_bytes(hello[at:at + 2], "big")  # cipher suites
    at += 1 + hello[at]  # compression methods
    end = at + 2 + int.from_bytes(hello[at:at + 2], "big")
    at += 2
    while at + 4 <= min(end, len(hello)):
        kind = int.from_bytes(hello[at:at + 2], "big")
        size = int.from_bytes(hello[at + 2:at + 4], "big")
        at += 4
        if kind == _ALPN_EXTENSION:
            return _names(hello[at + 2:at + size])
        at += size
    return []


def _names(listed: bytes) -> list[str]:
    names, at = [], 0
    while at < len(listed):
        size = listed[at]
        names.append(listed[at + 1:at + 1 + size].decode("ascii", "replace"))
        at += 1 + size
    return names
