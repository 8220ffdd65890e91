"""Broker configuration: Gazette's `gazette serve` flags and their environment variables."""

from __future__ import annotations

import socket
from dataclasses import dataclass

from gazette_core.server import flag_checks, listen
from gazette_core.server.flags import Check, Flag, parse_flags


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
    etcd_lease: int = 20
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
    persist_on_stop_timeout: float = 300.0
    http_header_timeout: float = 30.0
    http_idle_timeout: float = 60.0
    store_health_sweep: float = 3600.0
    store_health_limit: int = 1000
    max_append_queue: int = 32
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
    ("--etcd.lease", "etcd_lease", int, "ETCD_LEASE", "Etcd lease TTL in seconds"),
    ("--log.level", "log_level", str, "LOG_LEVEL", "trace, debug, info, warn, error or fatal"),
    ("--broker.file-only", "file_only", bool, "BROKER_FILE_ONLY",
     "Map every fragment store to file:/// under --broker.file-root (development)"),
    ("--broker.http-port", "http_port", int, "BROKER_HTTP_PORT",
     "A port of its own for HTTP: the content gateway and /debug/ (unset: the service port; "
     "0: any free port; -1: no HTTP)"),
    ("--broker.auth-keys", "auth_keys", str, "BROKER_AUTH_KEYS",
     "Base64 HMAC keys separated by whitespace or commas; the first signs, any verifies. "
     "Empty: no authorization"),
    ("--broker.server-cert-file", "server_cert_file", str, "BROKER_SERVER_CERT_FILE",
     "PEM certificate the server presents (turns on TLS)"),
    ("--broker.server-cert-key-file", "server_cert_key_file", str,
     "BROKER_SERVER_CERT_KEY_FILE", "PEM key of --broker.server-cert-file"),
    ("--broker.server-ca-file", "server_ca_file", str, "BROKER_SERVER_CA_FILE",
     "PEM CA bundle; when set, clients must present a certificate it signed"),
    ("--broker.peer-cert-file", "peer_cert_file", str, "BROKER_PEER_CERT_FILE",
     "PEM certificate presented to peer brokers"),
    ("--broker.peer-cert-key-file", "peer_cert_key_file", str, "BROKER_PEER_CERT_KEY_FILE",
     "PEM key of --broker.peer-cert-file"),
    ("--broker.peer-ca-file", "peer_ca_file", str, "BROKER_PEER_CA_FILE",
     "PEM CA bundle that verifies peer brokers (default: the system pool)"),
    ("--broker.auto-suspend", "auto_suspend", bool, "BROKER_AUTO_SUSPEND",
     "Suspend journals whose pulse saw no change for 15 intervals"),
    ("--broker.persist-on-stop-timeout", "persist_on_stop_timeout", float,
     "BROKER_PERSIST_ON_STOP_TIMEOUT",
     "Seconds a stopping broker keeps trying to persist its spools before it exits"),
    ("--broker.http-header-timeout", "http_header_timeout", float, "BROKER_HTTP_HEADER_TIMEOUT",
     "Seconds an HTTP connection may take to send a request head, counted from its opening "
     "or its previous response; idle connections close after it"),
    ("--broker.http-idle-timeout", "http_idle_timeout", float, "BROKER_HTTP_IDLE_TIMEOUT",
     "Seconds an HTTP request body may send nothing before it is refused (408)"),
    ("--broker.store-health-sweep", "store_health_sweep", float, "BROKER_STORE_HEALTH_SWEEP",
     "Seconds between sweeps that stop store health checkers unused since the last sweep"),
    ("--broker.store-health-limit", "store_health_limit", int, "BROKER_STORE_HEALTH_LIMIT",
     "Most store health checkers at once; FragmentStoreHealth for another store is refused"),
    ("--broker.max-append-queue", "max_append_queue", int, "BROKER_MAX_APPEND_QUEUE",
     "Appends that may wait for one journal's pipeline; more are refused with "
     "UNAVAILABLE, which clients retry (0: no limit)"),
    ("--debug.port", "debug_port", int, "DEBUG_PORT",
     "Port serving the /debug/ paths (too), on every interface"),
    ("--debug.private", "debug_private", bool, "DEBUG_PRIVATE",
     "Serve the /debug/ paths only on --debug.port, not on the service port"),
]


POSITIVE = frozenset({"persist_on_stop_timeout", "http_header_timeout", "http_idle_timeout",
                      "store_health_sweep", "store_health_limit"})


CHECKS: dict[str, Check] = {
    "port": flag_checks.service_port, "http_port": flag_checks.port_or_none,
    "debug_port": flag_checks.optional_port,
    "log_level": flag_checks.log_level, "etcd_address": flag_checks.etcd_address,
    "etcd_prefix": lambda v: flag_checks.etcd_prefix(v) if v else "must not be empty",
    "file_root": flag_checks.directory, "spool_dir": flag_checks.directory,
    "auth_keys": flag_checks.auth_keys,
}


def parse_args(argv: list[str]) -> BrokerConfig:
    """Parse `gazette serve` flags; each flag falls back to its environment variable."""
    # Zero would refuse every request body or spin the sweeper.
    return parse_flags("gazette serve", "Serve as a Gazette broker", FLAGS, BrokerConfig, argv,
                       POSITIVE, CHECKS)
