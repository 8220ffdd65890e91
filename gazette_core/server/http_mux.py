"""The HTTP server of a broker or consumer process: one mux of /debug/, /v1/ and its own routes.

It is served on the service port, where the front (`front.Front`) hands it
every connection that is not gRPC, or on a port of its own
(`--broker.http-port`, `--consumer.http-port`); a second one serving only
the /debug/ paths listens on `--debug.port`. The paths, first match wins:

- `/debug/...` (see `debug`) and `/metrics` (the older path of
  `/debug/metrics`), unless the process keeps them private;
- mounted sub-applications, e.g. the `/v1/` JSON gateway;
- the process's own routes: a broker's content gateway takes every other
  path, a consumer's application adds its own.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable, Iterable, Sequence

from aiohttp import web
from aiohttp.typedefs import Middleware

from gazette_core.server.debug import add_debug_routes, serve_metrics
from gazette_core.server.listen import binding

# Defaults of --broker.http-header-timeout and --broker.http-idle-timeout.
HEADER_TIMEOUT_S = 30.0
IDLE_TIMEOUT_S = 60.0
LINGER_S = 10.0
# Blocking reads never end by themselves; a stopping server cuts them after this.
SHUTDOWN_TIMEOUT_S = 1.0


class HttpMux:
    """An aiohttp server whose routes are gathered first and laid out in order by `start`."""

    def __init__(self, ready: Callable[[], bool], *, debug: bool = True,
                 header_timeout: float = HEADER_TIMEOUT_S, idle_timeout: float = IDLE_TIMEOUT_S,
                 middlewares: Sequence[Middleware] = ()) -> None:
        self.ready = ready
        self.debug = debug
        self.header_timeout = header_timeout
        self.idle_timeout = idle_timeout
        self._middlewares = middlewares
        self._mounts: list[tuple[str, web.Application]] = []
        self._routes: list[web.AbstractRouteDef] = []
        self._runner: web.AppRunner | None = None
        self.port: int = 0

    def mount(self, prefix: str, app: web.Application) -> None:
        """Serve the sub-application `app` under `prefix` (e.g. "/v1")."""
        self._mounts.append((prefix, app))

    def add_routes(self, routes: Iterable[web.AbstractRouteDef]) -> None:
        """Add the process's own routes, matched after /debug/ and the mounted applications."""
        self._routes.extend(routes)

    def _app(self) -> web.Application:
        app = web.Application(middlewares=self._middlewares)
        if self.debug:
            add_debug_routes(app, self.ready)
            app.router.add_get("/metrics", serve_metrics)
        # The one place sub-applications are mounted (the /v1/ JSON gateway): ahead of
        # the process's routes, whose catch-all would otherwise take their paths.
        for prefix, sub in self._mounts:
            app.add_subapp(prefix, sub)
        app.add_routes(self._routes)
        return app

    async def start(self) -> None:
        """Lay the routes out and make the server ready to take connections."""
        # Cancelling the handler of a vanished client ends its RPCs. aiohttp's
        # keep-alive timer runs from a connection's opening and from each
        # response, and data arriving does not restart it: a client that does not
        # finish a request head within it (sending slowly or not at all) is
        # disconnected. After an early answer, the unread rest of a body is
        # drained for at most the idle timeout too (aiohttp: 10 s).
        runner = web.AppRunner(self._app(), handle_signals=False, access_log=None,
                               shutdown_timeout=SHUTDOWN_TIMEOUT_S, handler_cancellation=True,
                               keepalive_timeout=self.header_timeout,
                               lingering_time=min(LINGER_S, self.idle_timeout))
        await runner.setup()
        self._runner = runner

    @property
    def protocol_factory(self) -> Callable[[], asyncio.BaseProtocol]:
        """What serves one connection accepted elsewhere (by the front)."""
        assert self._runner is not None and self._runner.server is not None
        return self._runner.server

    async def listen(self, flag: str, host: str, port: int,
                     tls: ssl.SSLContext | None = None) -> None:
        """Also listen on `host:port` of its own (port 0: any free one)."""
        assert self._runner is not None
        host = host or "0.0.0.0"
        with binding(flag, f"{host}:{port}"):
            await web.TCPSite(self._runner, host, port, ssl_context=tls).start()
        self.port = int(self._runner.addresses[0][1])

    async def stop(self) -> None:
        """Close the listener and every connection (also those the front handed over)."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
