"""CORS for the JSON gateway: browsers on the configured origins may call it.

An answer to a request whose `Origin` is one of the allowed origins carries
Access-Control-Allow-Origin (that origin), -Methods and -Headers. An OPTIONS
request (a browser's preflight) is answered at once, 200 with an empty body,
whatever its path or origin: it never reaches the gateway.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from aiohttp import web

ALLOW_METHODS = "GET, POST, OPTIONS"
ALLOW_HEADERS = ("Cache-Control, Content-Language, Content-Length, Content-Type, Expires, "
                 "Last-Modified, Pragma, Authorization")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def add_cors(app: web.Application, allow_origins: Sequence[str]) -> None:
    """Answer `app`'s requests from `allow_origins` with CORS headers, and preflights at once."""
    allowed = frozenset(allow_origins)

    @web.middleware
    async def preflight(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.method == "OPTIONS":
            return web.Response(status=200)
        return await handler(request)

    async def add_headers(request: web.Request, response: web.StreamResponse) -> None:
        # On prepare, so that streamed answers carry the headers too.
        origin = request.headers.get("Origin")
        if origin is not None and origin in allowed:
            response.headers["Access-Control-Allow-Origin"] = origin
            response.headers["Access-Control-Allow-Methods"] = ALLOW_METHODS
            response.headers["Access-Control-Allow-Headers"] = ALLOW_HEADERS

    app.middlewares.append(preflight)
    app.on_response_prepare.append(add_headers)
