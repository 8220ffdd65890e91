"""Broker configuration: Gazette's `gazette serve` flags and their environment variables."""

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


@dataclass
class BrokerConfig:
    """Settings of one broker process; field names follow the flag names."""

    host: str = ""
    port: int | str = 8080  # or unix:///path
    zone: str = "local"
    id: str = ""
    limit: int = 1024
    file_root: str = "/tmp/gazette"
    spool_dir: str = ""
    max_replication: int = 9
    etcd_address: str = "http://localhost:2379"
    etcd_prefix: str = "/gazette/cluster"
    etcd_lease: float = Duration(20)
    log_level: str = "warn"
    file_only: bool = False
    http_port: int | None = None  # None: HTTP shares the service port
    auth_keys: str = ""
    server_cert_file: str = ""
    server_cert_key_file: str = ""
    server_ca_file: str = ""
    peer_cert_file: str = ""
    peer_cert_key_file: str = ""
    peer_ca_file: str = ""
    auto_suspend: bool = False
    # Gazette's per-persist timeout is 5 minutes.
    persist_on_stop_timeout: float = Duration(300)
    http_header_timeout: float = Duration(30)
    http_idle_timeout: float = Duration(60)
    store_health_sweep: float = Duration(3600)
    store_health_limit: int = 1000
    max_append_queue: int = 32
    allow_origin: list[str] = field(default_factory=list)
    max_grpc_recv_size: int = 4 * 1024 * 1024
    max_append_rate: int = 0
    min_append_rate: int = 64 * 1024
    watch_delay: float = Duration(0.03)
    etcd_cert_file: str = ""
    etcd_cert_key_file: str = ""
    etcd_trusted_ca_file: str = ""
    log_format: str = "text"
    debug_port: int | None = None
    debug_private: bool = False

    @property
    def suffix(self) -> str:
        return self.id or socket.gethostname()

    def endpoint(self, port: int | str) -> str:
        """The advertised URL: https when this broker serves TLS; a unix:// port as it is."""
        if isinstance(port, str):
            return port
        scheme = "https" if self.server_cert_file else "http"
        return f"{scheme}://{self.host or socket.gethostname()}:{port}"


# (flag, field, type, environment variable, help)
FLAGS: list[Flag] = [
    ("--broker.host", "host", str, "BROKER_HOST", "Addressable, advertised hostname"),
    ("--broker.port", "port", listen.port, "BROKER_PORT",
     "Service port for gRPC and HTTP, or unix:///path (0: any free)"),
    ("--broker.zone", "zone", str, "BROKER_ZONE", "Availability zone of this broker"),
    ("--broker.id", "id", str, "BROKER_ID", "Unique ID of this broker within its zone"),
    ("--broker.limit", "limit", int, "BROKER_LIMIT", "Maximum journals served by this broker"),
    ("--broker.file-root", "file_root", str, "BROKER_FILE_ROOT",
     "Local directory backing file:// fragment stores"),
    ("--broker.spool-dir", "spool_dir", str, "BROKER_SPOOL_DIR",
     "Directory for spool temp files (default: the system temp directory)"),
    ("--broker.max-replication", "max_replication", int, "BROKER_MAX_REPLICATION",
     "Cap on the effective replication of any journal"),
    ("--etcd.address", "etcd_address", str, "ETCD_ADDRESS", "Etcd service address"),
    ("--etcd.prefix", "etcd_prefix", str, "ETCD_PREFIX", "Etcd prefix of the broker cluster"),
    ("--etcd.lease", "etcd_lease", Duration, "ETCD_LEASE_TTL,ETCD_LEASE",
     "Time-to-live of this process's Etcd lease (at least 1s; a number: seconds)"),
    ("--log.level", "log_level", str, "LOG_LEVEL", "trace, debug, info, warn, error or fatal"),
    ("--broker.file-only", "file_only", bool, "BROKER_FILE_ONLY",
     "Map every fragment store to file:/// under --broker.file-root (development)"),
    ("--broker.http-port", "http_port", int, "BROKER_HTTP_PORT",
     "A port of its own for HTTP: the content gateway and /debug/ (unset: the service port; "
     "0: any free port; -1: no HTTP)"),
    *server_flags("broker", "Base64 HMAC keys separated by whitespace or commas; the first "
                  "signs, any verifies. Empty: no authorization"),
    *tls_flags("--broker.peer-", "peer_", "PEM certificate presented to peer brokers",
               "PEM CA bundle that verifies peer brokers (default: the system pool)"),
    ("--broker.auto-suspend", "auto_suspend", bool, "BROKER_AUTO_SUSPEND",
     "Suspend journals whose pulse saw no change for 15 intervals"),
    ("--broker.persist-on-stop-timeout", "persist_on_stop_timeout", Duration,
     "BROKER_PERSIST_ON_STOP_TIMEOUT",
     "How long a stopping broker keeps trying to persist its spools before it exits"),
    ("--broker.http-header-timeout", "http_header_timeout", Duration, "BROKER_HTTP_HEADER_TIMEOUT",
     "How long an HTTP connection may take to send a request head, counted from its opening "
     "or its previous response; idle connections close after it"),
    ("--broker.http-idle-timeout", "http_idle_timeout", Duration, "BROKER_HTTP_IDLE_TIMEOUT",
     "How long an HTTP request body may send nothing before it is refused (408)"),
    ("--broker.store-health-sweep", "store_health_sweep", Duration, "BROKER_STORE_HEALTH_SWEEP",
     "Time between sweeps that stop store health checkers unused since the last sweep"),
    ("--broker.store-health-limit", "store_health_limit", int, "BROKER_STORE_HEALTH_LIMIT",
     "Most store health checkers at once; FragmentStoreHealth for another store is refused"),
    ("--broker.max-append-queue", "max_append_queue", int, "BROKER_MAX_APPEND_QUEUE",
     "Appends that may wait for one journal's pipeline; more are refused with "
     "UNAVAILABLE, which clients retry (0: no limit)"),
    ("--broker.allow-origin", "allow_origin", list, "BROKER_ALLOW_ORIGIN",
     "Origin whose browser requests the /v1/ JSON gateway answers with CORS headers; "
     "repeatable (the environment variable separates several by commas or spaces)"),
    *service_flags("broker", "BROKER"),
    ("--broker.max-append-rate", "max_append_rate", int, "BROKER_MAX_APPEND_RATE",
     "Bytes per second at most appended to any one journal; it also caps each journal's "
     "own max_append_rate (0: no cap)"),
    ("--broker.min-append-rate", "min_append_rate", int, "BROKER_MIN_APPEND_RATE",
     "Bytes per second a client must sustain while it streams an append, after a first "
     "second of grace, or the append is aborted (0: no minimum)"),
    *ETCD_LOG_FLAGS,
    ("--debug.port", "debug_port", int, "DEBUG_PORT",
     "Port serving the /debug/ paths (too), on every interface"),
    ("--debug.private", "debug_private", bool, "DEBUG_PRIVATE",
     "Serve the /debug/ paths only on --debug.port, not on the service port"),
]


POSITIVE = frozenset({"persist_on_stop_timeout", "http_header_timeout", "http_idle_timeout",
                      "store_health_sweep", "store_health_limit", "etcd_lease"})


CHECKS: dict[str, Check] = {
    "port": flag_checks.service_port, "http_port": flag_checks.port_or_none,
    "debug_port": flag_checks.optional_port,
    "log_level": flag_checks.log_level, "etcd_address": flag_checks.etcd_address,
    "etcd_prefix": lambda v: flag_checks.etcd_prefix(v) if v else "must not be empty",
    "file_root": flag_checks.directory, "spool_dir": flag_checks.directory,
    "auth_keys": flag_checks.auth_keys,
    **flag_checks.COMMON,
    "max_append_rate": flag_checks.not_negative, "min_append_rate": flag_checks.not_negative,
}


def parse_args(argv: list[str]) -> BrokerConfig:
    """Parse `gazette serve` flags; each flag falls back to its environment variable."""
    # Zero would refuse every request body or spin the sweeper.
    return parse_flags("gazette serve", "Serve as a Gazette broker", FLAGS, BrokerConfig, argv,
                       POSITIVE, CHECKS)
