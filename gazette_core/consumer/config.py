"""Consumer process configuration: `gazette consumer` flags and their environment variables.

The flags follow Gazette's consumer boilerplate (`--consumer.*`, `--etcd.*`,
`--broker.*`, `--log.level`); `--app` names the Python application object.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field

from gazette_core.server import flag_checks, listen
from gazette_core.server.common_flags import (
    ETCD_LOG_FLAGS,
    server_flags,
    service_flags,
    tls_flags,
)
from gazette_core.server.flags import Check, Duration, Flag, parse_flags

# Gazette's consumer groups live under this prefix, followed by the application's name.
PREFIX_BASE = "/gazette/consumers/"


@dataclass
class ConsumerConfig:
    """Settings of one consumer process; field names follow the flag names."""

    app: str = ""
    host: str = ""
    port: int | str = 8080  # or unix:///path
    zone: str = "local"
    id: str = ""
    limit: int = 32
    max_hot_standbys: int = 3
    http_port: int | None = None  # None: HTTP shares the service port
    data_dir: str = ""
    hint_interval: float = Duration(300)
    auth_keys: str = ""
    server_cert_file: str = ""
    server_cert_key_file: str = ""
    server_ca_file: str = ""
    broker_address: str = "http://localhost:8080"
    broker_cert_file: str = ""
    broker_cert_key_file: str = ""
    broker_ca_file: str = ""
    broker_auth_token: str = ""
    etcd_address: str = "http://localhost:2379"
    etcd_prefix: str = ""
    etcd_lease: float = Duration(20)
    log_level: str = "warn"
    allow_origin: list[str] = field(default_factory=list)
    max_grpc_recv_size: int = 4 * 1024 * 1024
    watch_delay: float = Duration(0.03)
    peer_cert_file: str = ""
    peer_cert_key_file: str = ""
    peer_ca_file: str = ""
    broker_auth_keys: str = ""
    broker_cache_size: int = 0
    broker_cache_ttl: float = Duration(60)
    broker_file_root: str = ""
    etcd_cert_file: str = ""
    etcd_cert_key_file: str = ""
    etcd_trusted_ca_file: str = ""
    log_format: str = "text"
    debug_port: int | None = None
    debug_private: bool = False

    @property
    def suffix(self) -> str:
        return self.id or socket.gethostname()

    @property
    def hint_interval_s(self) -> float:
        return self.hint_interval

    @property
    def root(self) -> str:
        """The consumer group's Etcd root: --etcd.prefix, else Gazette's default for the app."""
        if self.etcd_prefix:
            return self.etcd_prefix.rstrip("/")
        return PREFIX_BASE + (self.app.rpartition(":")[2] or "app")

    def endpoint(self, port: int | str) -> str:
        """The advertised URL: https when this consumer serves TLS; a unix:// port as it is."""
        if isinstance(port, str):
            return port
        scheme = "https" if self.server_cert_file else "http"
        return f"{scheme}://{self.host or socket.gethostname()}:{port}"


FLAGS: list[Flag] = [
    ("--app", "app", str, "CONSUMER_APP",
     "The application object as package.module:Attr (a class is instantiated)"),
    ("--consumer.host", "host", str, "CONSUMER_HOST", "Addressable, advertised hostname"),
    ("--consumer.port", "port", listen.port, "CONSUMER_PORT",
     "Service port for gRPC and HTTP, or unix:///path (0: any free)"),
    ("--consumer.zone", "zone", str, "CONSUMER_ZONE", "Availability zone of this process"),
    ("--consumer.id", "id", str, "CONSUMER_ID", "Unique ID of this process within its zone"),
    ("--consumer.limit", "limit", int, "CONSUMER_LIMIT",
     "Maximum shards (primaries and standbys) assigned to this process"),
    ("--consumer.max-hot-standbys", "max_hot_standbys", int, "CONSUMER_MAX_HOT_STANDBYS",
     "Cap on the hot standbys of any shard"),
    ("--consumer.http-port", "http_port", int, "CONSUMER_HTTP_PORT",
     "A port of its own for HTTP: /debug/ and the application's routes (unset: the service "
     "port; 0: any free port; -1: no HTTP)"),
    ("--consumer.data-dir", "data_dir", str, "CONSUMER_DATA_DIR",
     "Directory of the shards' local stores (default: the system temp directory)"),
    ("--consumer.hint-interval", "hint_interval", Duration, "CONSUMER_HINT_INTERVAL",
     "Time between the primary's writes of its recovery-log hints"),
    *server_flags("consumer", "Base64 HMAC keys separated by whitespace or commas; the first "
                  "signs this process's requests to peers (and to brokers, without "
                  "--broker.auth-keys), any verifies. Empty: no authorization"),
    ("--broker.address", "broker_address", str, "BROKER_ADDRESS",
     "Broker endpoint (comma-separated for several)"),
    *tls_flags("--broker.", "broker_", "PEM client certificate for https brokers",
               "PEM CA bundle that verifies https brokers (default: the system pool)",
               ca="trusted-ca-file", ca_field="broker_ca_file"),
    ("--broker.auth-token", "broker_auth_token", str, "BROKER_AUTH_TOKEN",
     "Bearer token for brokers, when no auth keys sign for them"),
    ("--etcd.address", "etcd_address", str, "ETCD_ADDRESS", "Etcd service address"),
    ("--etcd.prefix", "etcd_prefix", str, "ETCD_PREFIX",
     "Etcd prefix of the consumer group (default /gazette/consumers/<app name>)"),
    ("--etcd.lease", "etcd_lease", Duration, "ETCD_LEASE_TTL,ETCD_LEASE",
     "Time-to-live of this process's Etcd lease (at least 1s; a number: seconds)"),
    ("--log.level", "log_level", str, "LOG_LEVEL", "trace, debug, info, warn, error or fatal"),
    ("--consumer.allow-origin", "allow_origin", list, "CONSUMER_ALLOW_ORIGIN",
     "Origin whose browser requests the /v1/ JSON gateway answers with CORS headers; "
     "repeatable (the environment variable separates several by commas or spaces)"),
    *service_flags("consumer", "CONSUMER"),
    *tls_flags("--consumer.peer-", "peer_",
               "PEM certificate presented to other consumers of the group (e.g. proxying "
               "Shard API calls to a shard's primary; default: --broker.cert-file)",
               "PEM CA bundle that verifies other consumers (default: "
               "--broker.trusted-ca-file, else the system pool)"),
    ("--broker.auth-keys", "broker_auth_keys", str, "BROKER_AUTH_KEYS",
     "Base64 HMAC keys whose first signs this process's requests to brokers (default: "
     "--consumer.auth-keys)"),
    ("--broker.cache.size", "broker_cache_size", int, "BROKER_CACHE_SIZE",
     "Journal routes remembered, so calls go straight to a journal's brokers and reads "
     "take persisted fragments from their stores (0: none; every call goes through "
     "--broker.address)"),
    ("--broker.cache.ttl", "broker_cache_ttl", Duration, "BROKER_CACHE_TTL",
     "How long a remembered journal route is used"),
    ("--broker.file-root", "broker_file_root", str, "BROKER_FILE_ROOT",
     "The brokers' --broker.file-root as mounted here: file:// fragments are read from it "
     "directly (with --broker.cache.size)"),
    *ETCD_LOG_FLAGS,
    ("--debug.port", "debug_port", int, "DEBUG_PORT",
     "Port serving the /debug/ paths (too), on every interface"),
    ("--debug.private", "debug_private", bool, "DEBUG_PRIVATE",
     "Serve the /debug/ paths only on --debug.port, not on the service port"),
]

POSITIVE = frozenset({"hint_interval", "etcd_lease", "limit"})
CHECKS: dict[str, Check] = {
    "port": flag_checks.service_port, "http_port": flag_checks.port_or_none,
    "debug_port": flag_checks.optional_port,
    "log_level": flag_checks.log_level, "etcd_prefix": flag_checks.etcd_prefix,
    "etcd_address": flag_checks.etcd_address, "broker_address": flag_checks.broker_address,
    "data_dir": flag_checks.directory,
    "auth_keys": flag_checks.auth_keys,
    **flag_checks.COMMON,
    "broker_auth_keys": flag_checks.auth_keys, "broker_cache_size": flag_checks.not_negative,
    "broker_cache_ttl": flag_checks.not_negative,
}


def parse_args(argv: list[str]) -> ConsumerConfig:
    """Parse `gazette consumer` flags; each flag falls back to its environment variable."""
    return parse_flags("gazette consumer", "Run a Gazette consumer application", FLAGS,
                       ConsumerConfig, argv, POSITIVE, CHECKS)
