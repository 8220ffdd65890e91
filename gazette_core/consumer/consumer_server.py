"""A consumer process's servers: gRPC (the Shard API plus the app's services) and HTTP.

The gRPC server verifies tokens as brokers do when `--consumer.auth-keys` is
set and serves TLS with a server certificate. The HTTP server serves
`/metrics`, the `/v1/` JSON gateway of the Shard API (server.json_gateway)
and whatever routes the application adds. The application
registers both kinds in `init_application`, before either server starts.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, cast

import grpc
from aiohttp import web

from gazette_core.broker import keepalive
from gazette_core.broker.client.channel import dial
from gazette_core.broker.metrics import exposition
from gazette_core.consumer.app import InitArgs, call
from gazette_core.consumer.protocol import consumer_pb2_grpc as cpb_grpc
from gazette_core.consumer.shard_api import SHARD_CAPABILITIES, add_shard_servicer
from gazette_core.errors import GazetteError
from gazette_core.metrics.grpc_server import ServerMetrics
from gazette_core.server import auth, backlog
from gazette_core.server.interceptor import JOURNAL_CAPABILITIES, AuthInterceptor
from gazette_core.server.json_gateway import consumer_gateway
from gazette_core.server.listen import binding, check_bindable
from gazette_core.server.tls import server_credentials

if TYPE_CHECKING:
    from gazette_core.consumer.service import ConsumerService

log = logging.getLogger(__name__)

# The largest message received is --consumer.max-grpc-recv-size.
GRPC_OPTIONS = [("grpc.max_send_message_length", 16 * 1024 * 1024),
                ("grpc.so_reuseport", 0)]


class ConsumerServer:
    """The gRPC and HTTP servers of one consumer process."""

    def __init__(self, service: ConsumerService) -> None:
        config = service.config
        self.service = service
        try:
            self.keys = auth.parse_keys(config.auth_keys)
        except auth.AuthError as exc:
            raise auth.AuthError(f"--consumer.auth-keys: {exc}") from None
        self.credentials = server_credentials(config.server_cert_file,
                                              config.server_cert_key_file, config.server_ca_file)
        self.grpc: grpc.aio.Server | None = None
        self.http: web.Application | None = None
        self._runner: web.AppRunner | None = None
        self.port = 0
        self.http_port = 0

    async def start(self) -> None:
        config = self.service.config
        # Metrics first, so that they count RPCs refused for authorization too.
        interceptors: list[grpc.aio.ServerInterceptor] = [ServerMetrics()]
        if self.keys:
            interceptors.append(AuthInterceptor(self.keys, {**JOURNAL_CAPABILITIES,
                                                            **SHARD_CAPABILITIES}))
        options = [*GRPC_OPTIONS, ("grpc.max_receive_message_length", config.max_grpc_recv_size),
                   *keepalive.server_options(), *backlog.server_options()]
        self.grpc = grpc.aio.server(options=options, interceptors=interceptors)
        add_shard_servicer(self.grpc, self.service)
        if config.http_port >= 0:
            self.http = web.Application()
            self.http.router.add_get("/metrics", _serve_metrics)
            self.http.add_subapp("/v1", consumer_gateway(self._own_stub, config.allow_origin))
        address = f"{config.host or '0.0.0.0'}:{config.port}"
        check_bindable("--consumer.port", config.host or "0.0.0.0", config.port)
        with binding("--consumer.port", address):
            self.port = (self.grpc.add_insecure_port(address) if self.credentials is None
                         else self.grpc.add_secure_port(address, self.credentials))
        await self._init_application()
        await self.grpc.start()
        if self.http is not None:
            # Cancelling a vanished client's handler ends its gateway call.
            self._runner = web.AppRunner(self.http, access_log=None, handler_cancellation=True)
            await self._runner.setup()
            host = config.host or "0.0.0.0"
            site = web.TCPSite(self._runner, host, config.http_port)
            with binding("--consumer.http-port", f"{host}:{config.http_port}"):
                await site.start()
            self.http_port = _bound_port(self._runner)

    def _own_stub(self) -> cpb_grpc.ShardAsyncStub:
        """A Shard stub of this process for its JSON gateway: only the caller's
        Authorization, never this process's own keys, authorizes its calls."""
        config = replace(self.service.peer_config, auth=None)
        stub = cpb_grpc.ShardStub(dial(self.service.endpoint, config))
        return cast("cpb_grpc.ShardAsyncStub", stub)

    async def _init_application(self) -> None:
        init = getattr(self.service.app, "init_application", None)
        if init is None:
            return
        assert self.grpc is not None
        args = InitArgs(self.service.config, self.grpc, self.service)
        await call(init, args)
        if args.http_routes and self.http is None:
            raise GazetteError("the application adds HTTP routes, but --consumer.http-port "
                               "is -1 (no HTTP server)")
        if self.http is not None:
            self.http.add_routes(args.http_routes)

    async def stop(self) -> None:
        """Stop both servers; also after a start that failed half-way."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        server, self.grpc = self.grpc, None
        if server is not None:
            await server.stop(grace=1.0)


async def _serve_metrics(_: web.Request) -> web.Response:
    body, content_type = exposition()
    return web.Response(body=body, headers={"Content-Type": content_type})


def _bound_port(runner: web.AppRunner) -> int:
    for address in runner.addresses:
        return int(address[1])
    return 0
