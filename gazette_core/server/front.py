"""The one public listener of a server process: gRPC and HTTP on a single port.

Each accepted connection is sniffed (see `sniff`): a gRPC connection is
relayed to the process's gRPC server, which listens only on an internal
unix socket in a private directory (grpc.aio cannot adopt an accepted
socket); any other is handed to the process's aiohttp server as if it had
accepted it itself, so HTTP bytes are never copied. TLS connections are
routed by their ClientHello: gRPC's go to the gRPC server's own TLS, HTTP
clients are served HTTPS by aiohttp with `tls`.

A connection that does not say what it is within `sniff_timeout` is closed.
`stop()` closes the listener first, then every connection still sniffed or
relayed (aiohttp closes its own when its runner stops).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import socket
import ssl
import tempfile
from collections.abc import Awaitable, Callable

from gazette_core.errors import with_type
from gazette_core.server.listen import binding, listen_socket, unix_path
from gazette_core.server.relay import relay as relay_on_loop
from gazette_core.server.sniff import Kind, sniff
from gazette_core.tasks import cancel_and_wait

log = logging.getLogger(__name__)

# Default bound on how long a new connection may take to show what it speaks.
SNIFF_TIMEOUT_S = 30.0
# A failing accept (out of descriptors) is retried after this, not in a busy loop.
ACCEPT_RETRY_S = 0.1
# Longest path the internal socket may have (sun_path holds 108 bytes).
_MAX_UNIX_PATH = 100

Relay = Callable[[socket.socket, socket.socket], Awaitable[None]]
HttpFactory = Callable[[], asyncio.BaseProtocol]


class Front:
    """The listener of one process's service port (`flag` names it in errors)."""

    def __init__(self, flag: str, host: str, port: int | str, *,
                 tls: ssl.SSLContext | None = None, sniff_timeout: float = SNIFF_TIMEOUT_S,
                 relay: Relay = relay_on_loop) -> None:
        self.flag, self.host, self.requested = flag, host or "0.0.0.0", port
        # The bound TCP port once bound, or the `unix://` URL listened on.
        self.port: int | str = port
        self.tls = tls
        self.sniff_timeout = sniff_timeout
        self._relay = relay
        self._listener: socket.socket | None = None
        self._dir = ""
        self._grpc_path = ""
        self._grpc_port = 0
        self._http: HttpFactory | None = None
        self._accepting: asyncio.Task[None] | None = None
        self._connections: set[asyncio.Task[None]] = set()

    def bind(self) -> None:
        """Listen on the public port; ListenError names the flag when it cannot."""
        self._listener = listen_socket(self.flag, self.host, self.requested)
        if unix_path(self.requested) is None:
            self.port = int(self._listener.getsockname()[1])

    def attach_grpc(self, add_port: Callable[[str], int]) -> None:
        """Have the gRPC server listen (through `add_port`) where gRPC connections go."""
        self._dir = tempfile.mkdtemp(prefix="gazette-grpc-")
        path = os.path.join(self._dir, "grpc.sock")
        if len(path) <= _MAX_UNIX_PATH:
            with binding(self.flag, f"unix://{path}"):
                add_port(f"unix:{path}")
            self._grpc_path = path
        else:  # a long $TMPDIR: loopback TCP instead
            with binding(self.flag, "127.0.0.1:0"):
                self._grpc_port = add_port("127.0.0.1:0")

    @property
    def grpc_loopback(self) -> str | None:
        """An endpoint reaching the gRPC server directly, past the relay (None with TLS:
        the gRPC server's certificate names the public host)."""
        if self.tls is not None or not self._dir:
            return None
        return f"unix://{self._grpc_path}" if self._grpc_path else f"127.0.0.1:{self._grpc_port}"

    def serve(self, http: HttpFactory | None) -> None:
        """Start accepting; HTTP connections go to `http` (None: they are closed)."""
        self._http = http
        self._accepting = asyncio.get_running_loop().create_task(self._accept(), name="front")

    def stop_http(self) -> None:
        """Close HTTP connections from now on (the HTTP server is stopping)."""
        self._http = None

    async def close_listener(self) -> None:
        """Accept no more connections; those already accepted carry on."""
        await cancel_and_wait(self._accepting)
        self._accepting = None
        if self._listener is not None:
            self._listener.close()
            self._listener = None
            path = unix_path(self.requested)
            if path is not None:
                with contextlib.suppress(OSError):
                    os.unlink(path)

    async def stop(self) -> None:
        """Close the listener, then every connection still sniffed or relayed."""
        await self.close_listener()
        connections = list(self._connections)
        for task in connections:
            task.cancel()
        for task in connections:
            await cancel_and_wait(task)
        if self._dir:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = ""

    async def _accept(self) -> None:
        loop = asyncio.get_running_loop()
        assert self._listener is not None
        while True:
            try:
                sock, _ = await loop.sock_accept(self._listener)
            except OSError as exc:
                log.warning("%s: accepting a connection failed: %s", self.flag, exc)
                await asyncio.sleep(ACCEPT_RETRY_S)
                continue
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            task = loop.create_task(self._route(sock), name="front connection")
            self._connections.add(task)
            task.add_done_callback(self._connections.discard)

    async def _route(self, sock: socket.socket) -> None:
        """Sniff `sock` and hand it on; it is closed here unless someone took it."""
        taken = False
        try:
            async with asyncio.timeout(self.sniff_timeout):
                kind = await sniff(sock, self.tls is not None)
            if kind is Kind.GRPC:
                taken = True
                await self._relay_grpc(sock)
            elif kind is Kind.HTTP and self._http is not None:
                await asyncio.get_running_loop().connect_accepted_socket(
                    self._http, sock, ssl=self.tls,
                    ssl_handshake_timeout=self.sniff_timeout if self.tls else None)
                taken = True
        except (OSError, TimeoutError, ssl.SSLError) as exc:
            log.debug("%s: connection dropped before it was served: %s", self.flag, exc)
        except Exception as exc:  # one connection's failure ends only that connection
            log.warning("%s: connection dropped: %s", self.flag, with_type(exc))
        finally:
            if not taken:
                sock.close()

    async def _relay_grpc(self, sock: socket.socket) -> None:
        if self._grpc_path:
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            address: str | tuple[str, int] = self._grpc_path
        else:
            upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            address = ("127.0.0.1", self._grpc_port)
        upstream.setblocking(False)
        try:
            await asyncio.get_running_loop().sock_connect(upstream, address)
        except BaseException:
            upstream.close()
            sock.close()
            raise
        await self._relay(sock, upstream)
