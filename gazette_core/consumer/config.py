"""Consumer process configuration: `gazette consumer` flags and their environment variables.

The flags follow Gazette's consumer boilerplate (`--consumer.*`, `--etcd.*`,
`--broker.*`, `--log.level`); `--app` names the Python application object.
"""

from __future__ import annotations

from dataclasses import dataclass

from gazette_core.server import common_flags, flag_checks
from gazette_core.server.flags import Check, Duration, Flag, parse_flags

# Gazette's consumer groups live under this prefix, followed by the application's name.
PREFIX_BASE = "/gazette/consumers/"


@dataclass
class ConsumerConfig(common_flags.ServerSettings):
    """Settings of one consumer process; field names follow the flag names."""

    app: str = ""
    limit: int = 32
    max_hot_standbys: int = 3
    data_dir: str = ""
    hint_interval: float = Duration(300)
    broker_address: str = "http://localhost:8080"
    broker_cert_file: str = ""
    broker_cert_key_file: str = ""
    broker_ca_file: str = ""
    broker_auth_token: str = ""
    etcd_prefix: str = ""
    broker_auth_keys: str = ""
    broker_cache_size: int = 0
    broker_cache_ttl: float = Duration(60)
    broker_file_root: str = ""

    @property
    def hint_interval_s(self) -> float:
        return self.hint_interval

    @property
    def root(self) -> str:
        """The consumer group's Etcd root: --etcd.prefix, else Gazette's default for the app."""
        if self.etcd_prefix:
            return self.etcd_prefix.rstrip("/")
        return PREFIX_BASE + (self.app.rpartition(":")[2] or "app")


FLAGS: list[Flag] = [
    ("--app", "app", str, "CONSUMER_APP",
     "The application object as package.module:Attr (a class is instantiated)"),
    *common_flags.address_flags("consumer", "process"),
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
    *common_flags.server_flags(
        "consumer", "Base64 HMAC keys separated by whitespace or commas; the first signs this "
        "process's requests to peers (and to brokers, without --broker.auth-keys), any "
        "verifies. Empty: no authorization"),
    ("--broker.address", "broker_address", str, "BROKER_ADDRESS",
     "Broker endpoint (comma-separated for several)"),
    *common_flags.tls_flags(
        "--broker.", "broker_", "PEM client certificate for https brokers",
        "PEM CA bundle that verifies https brokers (default: the system pool)",
        ca="trusted-ca-file", ca_field="broker_ca_file"),
    ("--broker.auth-token", "broker_auth_token", str, "BROKER_AUTH_TOKEN",
     "Bearer token for brokers, when no auth keys sign for them"),
    *common_flags.etcd_flags(
        "Etcd prefix of the consumer group (default /gazette/consumers/<app name>)"),
    *common_flags.service_flags("consumer", "CONSUMER"),
    *common_flags.tls_flags(
        "--consumer.peer-", "peer_",
        "PEM certificate presented to other consumers of the group (e.g. proxying Shard API "
        "calls to a shard's primary; default: --broker.cert-file)",
        "PEM CA bundle that verifies other consumers (default: --broker.trusted-ca-file, "
        "else the system pool)"),
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
    *common_flags.ETCD_LOG_FLAGS,
    *common_flags.DEBUG_FLAGS,
]

POSITIVE = frozenset({"hint_interval", "etcd_lease", "limit"})
CHECKS: dict[str, Check] = {
    **flag_checks.COMMON,
    "etcd_prefix": flag_checks.etcd_prefix, "broker_address": flag_checks.broker_address,
    "data_dir": flag_checks.directory,
    "broker_auth_keys": flag_checks.auth_keys, "broker_cache_size": flag_checks.not_negative,
    "broker_cache_ttl": flag_checks.not_negative,
}


def parse_args(argv: list[str]) -> ConsumerConfig:
    """Parse `gazette consumer` flags; each flag falls back to its environment variable."""
    return parse_flags("gazette consumer", "Run a Gazette consumer application", FLAGS,
                       ConsumerConfig, argv, POSITIVE, CHECKS)
