"""Broker configuration: Gazette's `gazette serve` flags and their environment variables."""

from __future__ import annotations

from dataclasses import dataclass

from gazette_core.server import common_flags, flag_checks
from gazette_core.server.flags import Check, Duration, Flag, parse_flags


@dataclass
class BrokerConfig(common_flags.ServerSettings):
    """Settings of one broker process; field names follow the flag names."""

    limit: int = 1024
    file_root: str = "/tmp/gazette"
    spool_dir: str = ""
    max_replication: int = 9
    etcd_prefix: str = "/gazette/cluster"
    file_only: bool = False
    auto_suspend: bool = False
    # Gazette's per-persist timeout is 5 minutes.
    persist_on_stop_timeout: float = Duration(300)
    http_header_timeout: float = Duration(30)
    http_idle_timeout: float = Duration(60)
    store_health_sweep: float = Duration(3600)
    store_health_limit: int = 1000
    max_append_queue: int = 32
    max_append_rate: int = 0
    min_append_rate: int = 64 * 1024


# (flag, field, type, environment variable, help)
FLAGS: list[Flag] = [
    *common_flags.address_flags("broker", "broker"),
    ("--broker.limit", "limit", int, "BROKER_LIMIT", "Maximum journals served by this broker"),
    ("--broker.file-root", "file_root", str, "BROKER_FILE_ROOT",
     "Local directory backing file:// fragment stores"),
    ("--broker.spool-dir", "spool_dir", str, "BROKER_SPOOL_DIR",
     "Directory for spool temp files (default: the system temp directory)"),
    ("--broker.max-replication", "max_replication", int, "BROKER_MAX_REPLICATION",
     "Cap on the effective replication of any journal"),
    *common_flags.etcd_flags("Etcd prefix of the broker cluster"),
    ("--broker.file-only", "file_only", bool, "BROKER_FILE_ONLY",
     "Map every fragment store to file:/// under --broker.file-root (development)"),
    ("--broker.http-port", "http_port", int, "BROKER_HTTP_PORT",
     "A port of its own for HTTP: the content gateway and /debug/ (unset: the service port; "
     "0: any free port; -1: no HTTP)"),
    *common_flags.server_flags(
        "broker", "Base64 HMAC keys separated by whitespace or commas; the first signs, any "
        "verifies. Empty: no authorization"),
    *common_flags.tls_flags(
        "--broker.peer-", "peer_", "PEM certificate presented to peer brokers",
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
    *common_flags.service_flags("broker", "BROKER"),
    ("--broker.max-append-rate", "max_append_rate", int, "BROKER_MAX_APPEND_RATE",
     "Bytes per second at most appended to any one journal; it also caps each journal's "
     "own max_append_rate (0: no cap)"),
    ("--broker.min-append-rate", "min_append_rate", int, "BROKER_MIN_APPEND_RATE",
     "Bytes per second a client must sustain while it streams an append, after a first "
     "second of grace, or the append is aborted (0: no minimum)"),
    *common_flags.ETCD_LOG_FLAGS,
    *common_flags.DEBUG_FLAGS,
]


POSITIVE = frozenset({"persist_on_stop_timeout", "http_header_timeout", "http_idle_timeout",
                      "store_health_sweep", "store_health_limit", "etcd_lease"})


CHECKS: dict[str, Check] = {
    **flag_checks.COMMON,
    "etcd_prefix": lambda v: flag_checks.etcd_prefix(v) if v else "must not be empty",
    "file_root": flag_checks.directory, "spool_dir": flag_checks.directory,
    "max_append_rate": flag_checks.not_negative, "min_append_rate": flag_checks.not_negative,
}


def parse_args(argv: list[str]) -> BrokerConfig:
    """Parse `gazette serve` flags; each flag falls back to its environment variable."""
    # Zero would refuse every request body or spin the sweeper.
    return parse_flags("gazette serve", "Serve as a Gazette broker", FLAGS, BrokerConfig, argv,
                       POSITIVE, CHECKS)
