"""Binding a server's ports, with a failure that names the flag and the address.

gRPC reports a port it cannot bind as a RuntimeError about the address
alone, and aiohttp as an OSError; either becomes a ListenError such as
`--consumer.port: cannot listen on 0.0.0.0:8080: the address is in use`.
A gRPC port is tried by `check_bindable` first, so the reason is known and
gRPC's own log line about it never comes.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Iterator
from contextlib import contextmanager

from gazette_core.errors import GazetteError


class ListenError(GazetteError):
    """A server could not listen on its configured address."""


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


def check_bindable(flag: str, host: str, port: int) -> None:
    """Raise ListenError unless a listener could bind `host:port` now (port 0 always can)."""
    if port == 0:
        return
    address = f"{host}:{port}"
    with binding(flag, address):
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
        family, kind, proto, _, sockaddr = infos[0]
        with socket.socket(family, kind, proto) as sock:
            # As a server binds: a port left in TIME_WAIT by a previous run is free.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(sockaddr)
