"""A broker's security settings at work: its server's TLS and token checks, and its peer calls.

With `--broker.auth-keys` every RPC is verified by `AuthInterceptor`, and the
broker signs its own requests to peers (proxied Read, ListFragments and
Append, and replication) with the first key, scoped to the one journal
(`name=<journal>`) and valid for an hour (docs/design/protocol.md#authorization). With a server
certificate it serves TLS; peers advertising `https://` endpoints are
dialed with the peer certificate, key and CA. Peer connections ping and
probe (see `keepalive`), so that a silent peer is noticed.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import grpc

from gazette_core.broker import keepalive
from gazette_core.broker.client.channel import dial, journal_stub
from gazette_core.server import auth
from gazette_core.server.client_auth import bearer_metadata
from gazette_core.server.interceptor import AuthInterceptor
from gazette_core.server.tls import ClientTLS, client_credentials, server_credentials

if TYPE_CHECKING:
    from gazette_core.broker.config import BrokerConfig
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

PEER_TOKEN_S = auth.HOUR_S
# A pipeline is rebuilt this long before its replication token expires, so
# that expiry never cuts an append short.
RENEW_MARGIN_S = 300.0
Metadata = tuple[tuple[str, str], ...]


class Security:
    """Authorization keys and TLS files of one broker."""

    def __init__(self, config: BrokerConfig) -> None:
        """Read keys and TLS files now, so that a broker misconfigured fails before starting."""
        try:
            self.keys = auth.parse_keys(config.auth_keys)
        except auth.AuthError as exc:
            raise auth.AuthError(f"--broker.auth-keys: {exc}") from None
        self.server_credentials = server_credentials(
            config.server_cert_file, config.server_cert_key_file, config.server_ca_file)
        peer_tls = ClientTLS(config.peer_cert_file, config.peer_cert_key_file,
                             config.peer_ca_file)
        if peer_tls != ClientTLS():
            client_credentials(peer_tls)
        self.peer_config = keepalive.peer_config(peer_tls)

    def interceptors(self) -> list[grpc.aio.ServerInterceptor]:
        """Server interceptors: token verification when keys are configured, else none."""
        return [AuthInterceptor(self.keys)] if self.keys is not None else []

    def add_port(self, server: grpc.aio.Server, address: str) -> int:
        """Listen on `address`, with TLS when a server certificate is configured."""
        if self.server_credentials is None:
            return server.add_insecure_port(address)
        return server.add_secure_port(address, self.server_credentials)

    def peer_channel(self, endpoint: str) -> grpc.aio.Channel:
        return dial(endpoint, self.peer_config)

    def peer_stub(self, endpoint: str) -> JournalAsyncStub:
        return journal_stub(endpoint, self.peer_config)

    def peer_metadata(self, journal: str, capability: int) -> Metadata | None:
        """Our own authorization of a `capability` request for `journal` (None without keys)."""
        if self.keys is None:
            return None
        token = auth.mint(self.keys.signing, capability, auth.name_selector(journal),
                          PEER_TOKEN_S)
        return bearer_metadata(f"Bearer {token}")

    def replication(self, journal: str) -> tuple[Metadata | None, float]:
        """Metadata of a pipeline's Replicate streams, and the loop time to renew it by."""
        metadata = self.peer_metadata(journal, auth.REPLICATE)
        if metadata is None:
            return None, float("inf")
        return metadata, asyncio.get_running_loop().time() + PEER_TOKEN_S - RENEW_MARGIN_S
