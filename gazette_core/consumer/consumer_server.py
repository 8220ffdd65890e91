"""A consumer process's servers: gRPC (the Shard API plus the app's services) and HTTP.

The gRPC server verifies tokens as brokers do when `--consumer.auth-keys` is
set and serves TLS with a server certificate. The HTTP server serves the
/debug/ paths, the `/v1/` JSON gateway of the Shard API (server.json_gateway)
and whatever routes the application adds; both share the service port unless
`--consumer.http-port` is given (see server/serving.py). The application
registers both kinds in `init_application`, before either server starts.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, cast

import grpc

from gazette_core.broker import keepalive
from gazette_core.broker.client.channel import dial
from gazette_core.consumer.api.servicer import SHARD_CAPABILITIES, add_shard_servicer
from gazette_core.consumer.app import InitArgs, call
from gazette_core.consumer.protocol import consumer_pb2_grpc as cpb_grpc
from gazette_core.errors import GazetteError
from gazette_core.metrics.grpc_server import ServerMetrics
from gazette_core.server import auth, backlog
from gazette_core.server.interceptor import JOURNAL_CAPABILITIES, AuthInterceptor
from gazette_core.server.json_gateway import consumer_gateway
from gazette_core.server.process import quietly
from gazette_core.server.serving import Ports, Serving
from gazette_core.server.tls import server_credentials, server_ssl_context

if TYPE_CHECKING:
    from gazette_core.consumer.service import ConsumerService

log = logging.getLogger(__name__)

# The largest message received is --consumer.max-grpc-recv-size.
GRPC_OPTIONS = [("grpc.max_send_message_length", 16 * 1024 * 1024),
                ("grpc.so_reuseport", 0)]


class ConsumerServer:
    """The gRPC and HTTP servers of one consumer process, on its one port by default."""

    def __init__(self, service: ConsumerService) -> None:
        config = service.config
        self.service = service
        try:
            self.keys = auth.parse_keys(config.auth_keys)
        except auth.AuthError as exc:
            raise auth.AuthError(f"--consumer.auth-keys: {exc}") from None
        self.credentials = server_credentials(config.server_cert_file,
                                              config.server_cert_key_file, config.server_ca_file)
        self.serving = Serving(
            Ports("--consumer", config.host, config.port, config.http_port, config.debug_port,
                  config.debug_private),
            tls=server_ssl_context(config.server_cert_file, config.server_cert_key_file,
                                   config.server_ca_file))
        self.grpc: grpc.aio.Server | None = None

    @property
    def port(self) -> int | str:
        """The service port listened on (a unix:// URL for a unix socket)."""
        return self.serving.port

    @property
    def http_port(self) -> int | str:
        """Where HTTP is served (the service port by default; 0: nowhere)."""
        return self.serving.http_port or 0

    async def start(self) -> None:
        config = self.service.config
        # Metrics first, so that they count RPCs refused for authorization too.
        interceptors: list[grpc.aio.ServerInterceptor] = [ServerMetrics()]
        if self.keys:
            interceptors.append(AuthInterceptor(self.keys, {**JOURNAL_CAPABILITIES,
                                                            **SHARD_CAPABILITIES}))
        options = [*GRPC_OPTIONS, ("grpc.max_receive_message_length", config.max_grpc_recv_size),
                   *keepalive.server_options(), *backlog.server_options()]
        self.grpc = server = grpc.aio.server(options=options, interceptors=interceptors)
        add_shard_servicer(server, self.service)
        self.serving.bind(lambda address: server.add_insecure_port(address)
                          if self.credentials is None
                          else server.add_secure_port(address, self.credentials))
        if self.serving.http is not None:
            self.serving.http.mount("/v1", consumer_gateway(self._own_stub, config.allow_origin))
        await self._init_application()
        await server.start()
        await self.serving.start()

    def _own_stub(self) -> cpb_grpc.ShardAsyncStub:
        """A Shard stub of this process for its JSON gateway: only the caller's
        Authorization, never this process's own keys, authorizes its calls."""
        config = replace(self.service.peer_config, auth=None)
        stub = cpb_grpc.ShardStub(dial(self.serving.loopback(self.service.endpoint), config))
        return cast("cpb_grpc.ShardAsyncStub", stub)

    async def _init_application(self) -> None:
        init = getattr(self.service.app, "init_application", None)
        if init is None:
            return
        assert self.grpc is not None
        args = InitArgs(self.service.config, self.grpc, self.service)
        await call(init, args)
        http = self.serving.http
        if args.http_routes and http is None:
            raise GazetteError("the application adds HTTP routes, but --consumer.http-port "
                               "is -1 (no HTTP server)")
        if http is not None:
            http.add_routes(args.http_routes)

    async def stop(self) -> None:
        """Stop both servers; also after a start that failed half-way."""
        await quietly("stopping the HTTP server", self.serving.stop_http())
        await quietly("closing the service port", self.serving.close_listener())
        server, self.grpc = self.grpc, None
        if server is not None:
            await server.stop(grace=1.0)
        await quietly("closing the service port's connections", self.serving.stop())
