"""gRPC channels to brokers, dialed from Gazette endpoint URLs.

An endpoint is what a ProcessSpec advertises and what `--broker.address`
takes: `http://host:port`, `https://host:port` (TLS; port 443 by default), a
bare `host:port`, or `unix:///abs/path` (`unix://host/abs/path` is accepted
too; the host is ignored). An address may also list several endpoints
separated by commas, as `gazctl local env` exports them: `dial` gives such a
list a failover channel (failover.py), whose calls go to a live endpoint and
move on when it dies. Channels are cached per event loop, address and
`ClientConfig`, because `grpc.aio` channels are bound to the loop that
created them and are meant to be shared by many calls.

A `ClientConfig` holds the TLS files used for https endpoints, the
authorization attached to every call, any channel arguments of its own, and
what watches each of its channels while it is open (a task of the channel's
loop, ended by `close_channels`: brokers probe their peers, see `keepalive`).
Callers pass one explicitly (brokers dialing peers do), or set the default
for the current context with `use_client_config` (gazctl does, once per
command), which reaches every dial made below it, including routed calls to
other brokers.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import weakref
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

import grpc

from gazette_core.broker.client.failover import FailoverChannel
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.errors import GazetteError
from gazette_core.metrics.grpc_client import MeteredChannel
from gazette_core.server.client_auth import CallAuth, interceptors
from gazette_core.server.tls import ClientTLS, client_credentials

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


@dataclass(frozen=True)
class ClientConfig:
    """TLS files for https endpoints, and the authorization of every call (None: none)."""

    tls: ClientTLS = field(default_factory=ClientTLS)
    auth: CallAuth | None = None
    # Channel arguments overriding CHANNEL_OPTIONS (brokers' peer keepalives).
    options: tuple[tuple[str, int], ...] = ()
    # Run beside each channel dialed within an event loop, for as long as the
    # channel is open (brokers' liveness probes of their peers).
    watch: Callable[[grpc.aio.Channel], Coroutine[Any, Any, None]] | None = None


_NO_SETTINGS = ClientConfig()  # frozen, so safe to share as the default
_default_config: contextvars.ContextVar[ClientConfig] = contextvars.ContextVar(
    "gazette_client_config", default=_NO_SETTINGS)
_ChannelKey = tuple[str, bool, ClientConfig]
_channels: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[_ChannelKey, grpc.aio.Channel]]
_channels = weakref.WeakKeyDictionary()
_watches: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, set[asyncio.Task[None]]]
_watches = weakref.WeakKeyDictionary()
log = logging.getLogger(__name__)
# A stub per shared channel: routed calls ask for one each time (a Router keeps
# none, see routing.py), and building one costs microseconds on every append.
_stubs: weakref.WeakKeyDictionary[Any, JournalAsyncStub] = weakref.WeakKeyDictionary()
_FailoverKey = tuple[tuple[str, ...], ClientConfig]
_failovers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop,
                                      dict[_FailoverKey, FailoverChannel]]
_failovers = weakref.WeakKeyDictionary()


def use_client_config(config: ClientConfig) -> None:
    """Make `config` the default of every later dial in the current context."""
    _default_config.set(config)


def default_address() -> str:
    """The broker address of $BROKER_ADDRESS (all its endpoints), else localhost:8080."""
    listed = split_addresses(os.environ.get(ADDRESS_ENV, ""))
    return ",".join(listed) if listed else DEFAULT_ADDRESS


def split_addresses(text: str) -> list[str]:
    """The endpoints of a comma-separated list (one endpoint is a list of one)."""
    return [part.strip() for part in text.split(",") if part.strip()]


def endpoints_of(address: str) -> list[str]:
    """The endpoints of an address (one, or several separated by commas), each checked.

    Raises GazetteError naming the first malformed endpoint, or the address
    when it lists none.
    """
    listed = split_addresses(address)
    if not listed:
        raise GazetteError(f"invalid broker address {address!r}: expected host:port or a URL")
    for endpoint in listed:
        _parse(endpoint)
    return listed


def grpc_target(address: str) -> str:
    """The grpc target string for one Gazette endpoint URL."""
    return _parse(address)[0]


def endpoint_problem(address: str) -> str | None:
    """Why `address` is not one endpoint URL (or host:port), or None when it is."""
    try:
        _target(address)
    except _Malformed as exc:
        return str(exc)
    return None


class _Malformed(ValueError):
    """The reason an endpoint is malformed (the caller names whose address it was)."""


def _parse(address: str) -> tuple[str, bool]:
    """(grpc target, whether it needs TLS) of an endpoint URL."""
    try:
        return _target(address)
    except _Malformed as exc:
        raise GazetteError(f"invalid broker address {address!r}: {exc}") from None


def _target(address: str) -> tuple[str, bool]:
    if "," in address:  # dial() splits lists; a grpc target names one endpoint
        raise _Malformed("one endpoint is needed here, not a list")
    if "://" not in address:
        if not address or address.startswith("/"):
            raise _Malformed("expected host:port or a URL")
        return address, False
    try:
        url = urlsplit(address)
        port = url.port if url.scheme in ("http", "https") else None
    except ValueError as exc:  # an unclosed "[", a port out of range or not a number
        raise _Malformed(str(exc)) from None
    if url.scheme in ("http", "https"):
        if not url.hostname:
            raise _Malformed("missing host")
        secure = url.scheme == "https"
        return (url.netloc if port else f"{url.netloc}:{443 if secure else 80}"), secure
    if url.scheme == "unix":
        if not url.path.startswith("/"):
            raise _Malformed("expected unix:///abs/path")
        return f"unix://{url.path}", False
    raise _Malformed(f"scheme must be http, https or unix, not {url.scheme!r}")


def dial(address: str, config: ClientConfig | None = None) -> grpc.aio.Channel:
    """A shared channel to `address`, created on first use within this event loop.

    An address listing several endpoints gets a failover channel over them.
    `config` defaults to the context's (see `use_client_config`).
    """
    config = config if config is not None else _default_config.get()
    if "," in address:
        listed = endpoints_of(address)
        if len(listed) > 1:
            return _failover(listed, config)
        address = listed[0]
    target, secure = _parse(address)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        # Outside a loop there is nothing to key the cache on; the caller owns the channel.
        return _new_channel(target, secure, config)
    per_loop = _channels.setdefault(loop, {})
    key = (target, secure, config)
    channel = per_loop.get(key)
    # A caller may have closed the shared channel; replace it rather than hand it out.
    if channel is None or channel.get_state() == grpc.ChannelConnectivity.SHUTDOWN:
        fresh = _new_channel(target, secure, config)
        per_loop[key] = channel = fresh
        if config.watch is not None:
            # Probes stay out of the gRPC client metrics: Go makes none.
            _start_watch(loop, config.watch(fresh.inner), target)
    return channel


def _start_watch(loop: asyncio.AbstractEventLoop, watch: Coroutine[Any, Any, None],
                 target: str) -> None:
    tasks = _watches.setdefault(loop, set())
    task = loop.create_task(watch, name=f"watch of the channel to {target}")
    tasks.add(task)  # the loop itself keeps only a weak reference

    def finished(task: asyncio.Task[None]) -> None:
        tasks.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.warning("the watch of the channel to %s failed: %r", target, exc)
    task.add_done_callback(finished)


def _failover(endpoints: list[str], config: ClientConfig) -> FailoverChannel:
    """The shared failover channel over `endpoints`, which dials each with `config`."""
    def connect(endpoint: str) -> grpc.aio.Channel:
        return dial(endpoint, config)

    try:
        per_loop = _failovers.setdefault(asyncio.get_running_loop(), {})
    except RuntimeError:
        return FailoverChannel(endpoints, connect)  # its endpoints are dialed in a loop later
    key = (tuple(endpoints), config)
    if key not in per_loop:
        per_loop[key] = FailoverChannel(endpoints, connect)
    return per_loop[key]


def _new_channel(target: str, secure: bool, config: ClientConfig) -> MeteredChannel:
    # Without authorization there are no interceptors, keeping calls on gRPC's direct path.
    hooks = interceptors(config.auth) if config.auth is not None else None
    options = list({**dict(CHANNEL_OPTIONS), **dict(config.options)}.items())
    if secure:
        return MeteredChannel(grpc.aio.secure_channel(
            target, client_credentials(config.tls), options=options, interceptors=hooks))
    return MeteredChannel(grpc.aio.insecure_channel(target, options=options,
                                                    interceptors=hooks))


def journal_stub(address: str | None = None, config: ClientConfig | None = None
                 ) -> JournalAsyncStub:
    """A Journal service stub over the shared channel to `address` (default_address()).

    `address` may list several endpoints separated by commas (see the module docstring).
    """
    channel = dial(address or default_address(), config)
    stub = _stubs.get(channel)
    if stub is None:
        # The generated overloads cannot tell an aio channel from a sync one.
        stub = cast("JournalAsyncStub", pb_grpc.JournalStub(channel))
        _stubs[channel] = stub
    return stub


async def close_channels() -> None:
    """Close every cached channel of the running loop (e.g. before the loop ends)."""
    loop = asyncio.get_running_loop()
    _failovers.pop(loop, None)  # their channels are among those closed below
    per_loop = _channels.pop(loop, {})
    for channel in per_loop.values():
        await channel.close()
    watches = _watches.pop(loop, set())
    for task in watches:
        task.cancel()
    await asyncio.gather(*watches, return_exceptions=True)
