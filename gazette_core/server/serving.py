"""Where a broker or consumer process listens, as its flags ask.

- By default gRPC and HTTP share the service port (`--broker.port`,
  `--consumer.port`): a `Front` listens there, relays gRPC to the gRPC
  server's internal listener and hands HTTP to the process's `HttpMux`.
- An explicit HTTP port (`--broker.http-port`, `--consumer.http-port`)
  gives HTTP a listener of its own, and gRPC listens on the service port
  itself; -1 means no HTTP at all.
- `--debug.port` serves the /debug/ paths (also) there, on every
  interface; `--debug.private` keeps them off the service (or HTTP) port.

A process binds (`bind`), registers its routes on `http`, starts its gRPC
server, then `start`s; it sets `ready` once it fully serves. Stopping is in
steps, so gRPC can outlive HTTP while a process drains: `stop_http`, then
`close_listener` before its gRPC server stops, then `stop`.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from aiohttp.typedefs import Middleware

from gazette_core.server.front import SNIFF_TIMEOUT_S, Front
from gazette_core.server.http_mux import HEADER_TIMEOUT_S, IDLE_TIMEOUT_S, HttpMux
from gazette_core.server.listen import address_of, binding, check_bindable


@dataclass(frozen=True)
class Ports:
    """The listening flags of a process; `flag` is its prefix, "--broker" or "--consumer"."""

    flag: str
    host: str
    port: int | str
    http_port: int | None = None  # None: the service port; -1: none
    debug_port: int | None = None
    debug_private: bool = False


class Serving:
    """The listeners of one process, and its HTTP mux (None with no HTTP at all)."""

    def __init__(self, ports: Ports, *, tls: ssl.SSLContext | None = None,
                 header_timeout: float = HEADER_TIMEOUT_S,
                 idle_timeout: float = IDLE_TIMEOUT_S,
                 middlewares: Sequence[Middleware] = ()) -> None:
        self.ports = ports
        self.tls = tls
        self.ready = False
        self.port: int | str = 0
        self.http: HttpMux | None = None
        if ports.http_port is None or ports.http_port >= 0:
            self.http = HttpMux(self._ready, debug=not ports.debug_private,
                                header_timeout=header_timeout, idle_timeout=idle_timeout,
                                middlewares=middlewares)
        self.front: Front | None = None
        if ports.http_port is None:
            self.front = Front(f"{ports.flag}.port", ports.host, ports.port, tls=tls,
                               sniff_timeout=min(SNIFF_TIMEOUT_S, header_timeout))
        self.debug: HttpMux | None = None
        if ports.debug_port is not None:
            self.debug = HttpMux(self._ready)

    def _ready(self) -> bool:
        return self.ready

    @property
    def http_port(self) -> int | str | None:
        """Where HTTP is served: the service port, a port of its own, or None (nowhere)."""
        if self.http is None:
            return None
        return self.port if self.front is not None else self.http.port

    def loopback(self, endpoint: str) -> str:
        """How the process's own HTTP handlers best reach its gRPC server at `endpoint`."""
        direct = self.front.grpc_loopback if self.front is not None else None
        return direct or endpoint

    def bind(self, add_grpc_port: Callable[[str], int]) -> None:
        """Listen on the service port, and have gRPC listen where it should (`add_grpc_port`)."""
        flag, host = f"{self.ports.flag}.port", self.ports.host or "0.0.0.0"
        if self.front is not None:
            self.front.bind()
            self.front.attach_grpc(add_grpc_port)
            self.port = self.front.port
            return
        check_bindable(flag, host, self.ports.port)
        address = address_of(host, self.ports.port)
        with binding(flag, address):
            bound = add_grpc_port(address)
        self.port = self.ports.port if isinstance(self.ports.port, str) else bound

    async def start(self) -> None:
        """Serve HTTP (the gRPC server is started by the process, after `bind`)."""
        if self.http is not None:
            await self.http.start()
            if self.front is None:
                assert self.ports.http_port is not None
                await self.http.listen(f"{self.ports.flag}.http-port", self.ports.host,
                                       self.ports.http_port, self.tls)
        if self.front is not None:
            self.front.serve(self.http.protocol_factory if self.http is not None else None)
        if self.debug is not None:
            await self.debug.start()
            assert self.ports.debug_port is not None
            await self.debug.listen("--debug.port", "0.0.0.0", self.ports.debug_port)

    async def stop_http(self) -> None:
        """Stop serving HTTP; gRPC carries on."""
        self.ready = False
        if self.front is not None:
            self.front.stop_http()
        for mux in (self.http, self.debug):
            if mux is not None:
                await mux.stop()

    async def close_listener(self) -> None:
        """Take no new connections (call before the gRPC server stops)."""
        if self.front is not None:
            await self.front.close_listener()

    async def stop(self) -> None:
        """Stop everything still running: HTTP, the listener, relayed connections."""
        await self.stop_http()
        if self.front is not None:
            await self.front.stop()
