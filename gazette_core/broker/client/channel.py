"""gRPC channels to brokers, dialed from Gazette endpoint URLs.

An endpoint is what a ProcessSpec advertises and what `--broker.address`
takes: `http://host:port`, a bare `host:port`, or `unix:///abs/path`
(`unix://host/abs/path` is accepted too; the host is ignored). Channels are
cached per event loop and address, because `grpc.aio` channels are bound to
the loop that created them and are meant to be shared by many calls.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from typing import TYPE_CHECKING, cast
from urllib.parse import urlsplit

import grpc

from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.errors import GazetteError

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

DEFAULT_ADDRESS = "http://localhost:8080"
ADDRESS_ENV = "BROKER_ADDRESS"
MAX_MESSAGE_BYTES = 16 * 1024 * 1024

CHANNEL_OPTIONS: list[tuple[str, int]] = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    # Go servers by default answer pings more frequent than every 5 minutes
    # with GOAWAY, so probe no more often than that; blocking reads idle
    # for hours and still need dead connections noticed.
    ("grpc.keepalive_time_ms", 5 * 60 * 1000),
    ("grpc.keepalive_timeout_ms", 20 * 1000),
    ("grpc.keepalive_permit_without_calls", 0),
    # Brokers restart; gRPC's default back-off grows to two minutes, which would
    # keep a long-gone peer unreachable long after it is back.
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 5000),
]

_channels: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, grpc.aio.Channel]] = (
    weakref.WeakKeyDictionary()
)


def default_address() -> str:
    """The broker endpoint from $BROKER_ADDRESS, else http://localhost:8080."""
    return os.environ.get(ADDRESS_ENV) or DEFAULT_ADDRESS


def grpc_target(address: str) -> str:
    """The grpc target string for a Gazette endpoint URL."""
    if "://" not in address:
        if not address or address.startswith("/"):
            raise GazetteError(f"invalid broker address {address!r}: expected host:port or a URL")
        return address
    url = urlsplit(address)
    if url.scheme == "http":
        if not url.hostname:
            raise GazetteError(f"invalid broker address {address!r}: missing host")
        return url.netloc if url.port else f"{url.netloc}:80"
    if url.scheme == "unix":
        if not url.path.startswith("/"):
            raise GazetteError(f"invalid broker address {address!r}: expected unix:///abs/path")
        return f"unix://{url.path}"
    if url.scheme == "https":
        raise GazetteError(f"https broker addresses are not supported yet: {address!r}")
    raise GazetteError(
        f"invalid broker address {address!r}: scheme must be http or unix, not {url.scheme!r}"
    )


def dial(address: str) -> grpc.aio.Channel:
    """A shared insecure channel to `address`, created on first use within this event loop."""
    target = grpc_target(address)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        # Outside a loop there is nothing to key the cache on; the caller owns the channel.
        return grpc.aio.insecure_channel(target, options=CHANNEL_OPTIONS)
    per_loop = _channels.setdefault(loop, {})
    channel = per_loop.get(target)
    # A caller may have closed the shared channel; replace it rather than hand it out.
    if channel is None or channel.get_state() == grpc.ChannelConnectivity.SHUTDOWN:
        channel = grpc.aio.insecure_channel(target, options=CHANNEL_OPTIONS)
        per_loop[target] = channel
    return channel


def journal_stub(address: str | None = None) -> JournalAsyncStub:
    """A Journal service stub over the shared channel to `address` (default_address())."""
    # The generated overloads cannot tell an aio channel from a sync one.
    return cast("JournalAsyncStub", pb_grpc.JournalStub(dial(address or default_address())))


async def close_channels() -> None:
    """Close every cached channel of the running loop (e.g. before the loop ends)."""
    per_loop = _channels.pop(asyncio.get_running_loop(), {})
    for channel in per_loop.values():
        await channel.close()
