"""A consumer process's servers: gRPC (the Shard API plus the app's services) and HTTP.

The gRPC server verifies tokens as brokers do when `--consumer.auth-keys` is
set and serves TLS with a server certificate. The HTTP server serves
`/metrics` and whatever routes the application adds. The application
registers both kinds in `init_application`, before either server starts.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import grpc
from aiohttp import web

from gazette_core.broker import keepalive
from gazette_core.broker.metrics import exposition
from gazette_core.consumer.protocol import consumer_pb2_grpc as cpb_grpc
from gazette_core.consumer.shard_api import ShardServicer
from gazette_core.server import auth
from gazette_core.server.interceptor import JOURNAL_CAPABILITIES, AuthInterceptor
from gazette_core.server.tls import server_credentials
from gazette_core.server.tolerant_decoding import add_tolerant

if TYPE_CHECKING:
    from gazette_core.consumer.service import ConsumerService

log = logging.getLogger(__name__)

MAX_RECV = 4 * 1024 * 1024
GRPC_OPTIONS = [("grpc.max_receive_message_length", MAX_RECV),
                ("grpc.max_send_message_length", 16 * 1024 * 1024),
                ("grpc.so_reuseport", 0)]
SHARD_CAPABILITIES: Mapping[str, int] = {
    "/consumer.Shard/Stat": auth.READ,
    "/consumer.Shard/List": auth.LIST,
    "/consumer.Shard/Apply": auth.APPLY,
    "/consumer.Shard/GetHints": auth.READ,
    "/consumer.Shard/Unassign": auth.APPLY,
}


@dataclass
class InitArgs:
    """What `Application.init_application` gets to extend the consumer process with."""

    config: Any  # the ConsumerConfig
    service: ConsumerService
    server: grpc.aio.Server  # add gRPC services here (add_XServicer_to_server)
    http: web.Application | None  # add HTTP routes here (None with --consumer.http-port -1)


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
        interceptors = [AuthInterceptor(self.keys, {**JOURNAL_CAPABILITIES,
                                                    **SHARD_CAPABILITIES})] if self.keys else []
        self.grpc = grpc.aio.server(options=[*GRPC_OPTIONS, *keepalive.server_options()],
                                    interceptors=interceptors)
        add_tolerant(cpb_grpc.add_ShardServicer_to_server, ShardServicer(self.service),
                     self.grpc)
        if config.http_port >= 0:
            self.http = web.Application()
            self.http.router.add_get("/metrics", _serve_metrics)
        address = f"{config.host or '0.0.0.0'}:{config.port}"
        self.port = (self.grpc.add_insecure_port(address) if self.credentials is None
                     else self.grpc.add_secure_port(address, self.credentials))
        await self._init_application()
        await self.grpc.start()
        if self.http is not None:
            self._runner = web.AppRunner(self.http, access_log=None)
            await self._runner.setup()
            site = web.TCPSite(self._runner, config.host or "0.0.0.0", config.http_port)
            await site.start()
            self.http_port = _bound_port(self._runner)

    async def _init_application(self) -> None:
        init = getattr(self.service.app, "init_application", None)
        if init is None:
            return
        assert self.grpc is not None
        result = init(InitArgs(self.service.config, self.service, self.grpc, self.http))
        if inspect.isawaitable(result):
            await result

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self.grpc is not None:
            await self.grpc.stop(grace=1.0)


async def _serve_metrics(_: web.Request) -> web.Response:
    body, content_type = exposition()
    return web.Response(body=body, headers={"Content-Type": content_type})


def _bound_port(runner: web.AppRunner) -> int:
    for address in runner.addresses:
        return int(address[1])
    return 0
