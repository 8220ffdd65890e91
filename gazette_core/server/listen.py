"""Binding a server's ports, with a failure that names the flag and the address.

A service port is a TCP port number or `unix:///path/to/socket` (see `port`).
gRPC reports a port it cannot bind as a RuntimeError about the address
alone, and aiohttp as an OSError; either becomes a ListenError such as
`--consumer.port: cannot listen on 0.0.0.0:8080: the address is in use`.
A gRPC port is tried by `check_bindable` first, so the reason is known and
gRPC's own log line about it never comes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from gazette_core.errors import GazetteError

UNIX = "unix://"
BACKLOG = 1024


class ListenError(GazetteError):
    """A server could not listen on its configured address."""


def port(value: str | int) -> int | str:
    """A service port flag's value: a TCP port number, or a `unix:///path` URL as given."""
    if isinstance(value, int):
        return value
    text = value.strip()
    if text.startswith(UNIX):
        return text
    return int(text)


def unix_path(value: int | str) -> str | None:
    """The socket path of a `unix://` port, or None for a TCP port."""
    if isinstance(value, str) and value.startswith(UNIX):
        return value[len(UNIX):]
    return None


def address_of(host: str, value: int | str) -> str:
    """How an error names the address of `value`: host:port, or the unix URL."""
    return value if unix_path(value) is not None else f"{host}:{value}"  # type: ignore[return-value]


@contextmanager
def binding(flag: str, address: str) -> Iterator[None]:
    """Run a bind of `address`, configured by `flag`; a failure raises ListenError."""
    try:
        yield
    except OSError as exc:
        reason = "the address is in use" if exc.errno == errno.EADDRINUSE else \
            (exc.strerror or str(exc))
        raise ListenError(f"{flag}: cannot listen on {address}: {reason}") from None
    except RuntimeError as exc:
        if "bind" not in str(exc).lower():
            raise
        # gRPC does not say why; in practice another process holds the port.
        raise ListenError(f"{flag}: cannot listen on {address}: the address is in use "
                          "or not one of this host's") from None


def check_bindable(flag: str, host: str, value: int | str) -> None:
    """Raise ListenError unless a listener could bind `value` now (port 0 always can)."""
    if value == 0:
        return
    listen_socket(flag, host, value).close()
    path = unix_path(value)
    if path is not None:
        with contextlib.suppress(OSError):
            os.unlink(path)


def listen_socket(flag: str, host: str, value: int | str) -> socket.socket:
    """A non-blocking socket listening on `host:value`, or on a `unix://` path."""
    path = unix_path(value)
    with binding(flag, address_of(host, value)):
        if path is not None:
            _remove_stale(path)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sockaddr: str | tuple[Any, ...] = path
        else:
            family, kind, proto, _, sockaddr = socket.getaddrinfo(
                host, value, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
            sock = socket.socket(family, kind, proto)
            # As a server binds: a port left in TIME_WAIT by a previous run is free.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(sockaddr)
            sock.listen(BACKLOG)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
    return sock


def _remove_stale(path: str) -> None:
    """Remove a socket file nobody listens on any more (a process that died left it)."""
    try:
        if not stat.S_ISSOCK(os.stat(path).st_mode):
            return  # not ours to remove: binding fails on it, naming the address
    except OSError:
        return
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(path)
        except ConnectionRefusedError:
            os.unlink(path)
        except OSError:
            pass
