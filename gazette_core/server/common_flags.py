"""Flags every server process has, brokers and consumers alike: service limits, TLS, Etcd, logging.

Each process's config module splices these rows into its own table, in the
order of its `--help`; its config dataclass extends `ServerSettings`, the
fields both processes share, under the flags' names. `tls_flags` makes the
three rows of each certificate, key and CA bundle (server, peers, brokers,
Etcd), with the environment variables named after the flags.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from typing import Protocol

from gazette_core.server import listen
from gazette_core.server.flags import Duration, Flag
from gazette_core.server.tls import ClientTLS


def address_flags(role: str, noun: str) -> list[Flag]:
    """`--<role>.host`, `.port`, `.zone` and `.id`: where the `noun` listens and who it is."""
    env = role.upper()
    return [
        (f"--{role}.host", "host", str, f"{env}_HOST", "Addressable, advertised hostname"),
        (f"--{role}.port", "port", listen.port, f"{env}_PORT",
         "Service port for gRPC and HTTP, or unix:///path (0: any free)"),
        (f"--{role}.zone", "zone", str, f"{env}_ZONE", f"Availability zone of this {noun}"),
        (f"--{role}.id", "id", str, f"{env}_ID", f"Unique ID of this {noun} within its zone"),
    ]


def etcd_flags(prefix_help: str) -> list[Flag]:
    """The rows of Etcd and the log level; `prefix_help` explains `--etcd.prefix`."""
    return [
        ("--etcd.address", "etcd_address", str, "ETCD_ADDRESS", "Etcd service address"),
        ("--etcd.prefix", "etcd_prefix", str, "ETCD_PREFIX", prefix_help),
        ("--etcd.lease", "etcd_lease", Duration, "ETCD_LEASE_TTL,ETCD_LEASE",
         "Time-to-live of this process's Etcd lease (at least 1s; a number: seconds)"),
        ("--log.level", "log_level", str, "LOG_LEVEL", "trace, debug, info, warn, error or fatal"),
    ]


def service_flags(role: str, env: str) -> list[Flag]:
    """The `--<role>.*` rows of a service's CORS origins, gRPC limits and Etcd watch.

    Their environment variables are `<env>_*`.
    """
    return [
        (f"--{role}.allow-origin", "allow_origin", list, f"{env}_ALLOW_ORIGIN",
         "Origin whose browser requests the /v1/ JSON gateway answers with CORS headers; "
         "repeatable (the environment variable separates several by commas or spaces)"),
        (f"--{role}.max-grpc-recv-size", "max_grpc_recv_size", int,
         f"{env}_MAX_GRPC_RECV_SIZE",
         "Largest gRPC message the server accepts, in bytes; a larger one is refused "
         "(RESOURCE_EXHAUSTED)"),
        (f"--{role}.watch-delay", "watch_delay", Duration, f"{env}_WATCH_DELAY",
         "Delay before watched Etcd changes are applied, so a burst of them is applied at "
         "once (0: apply each at once)"),
    ]


def env_of(flag: str) -> str:
    """A flag's environment variable: its name in capitals, with `_` for `.` and `-`."""
    return flag[2:].upper().replace(".", "_").replace("-", "_")


def tls_flags(flag: str, field: str, cert_help: str, ca_help: str, *, ca: str = "ca-file",
              ca_field: str = "") -> list[Flag]:
    """The rows of a PEM certificate, its key and a CA bundle, each named `<flag>...`.

    Flags `<flag>cert-file`, `<flag>cert-key-file` and `<flag><ca>` fill the
    fields `<field>cert_file`, `<field>cert_key_file` and `<field><ca>` (or
    `ca_field`); their environment variables are the flags' names (`env_of`).
    """
    cert, key, bundle = f"{flag}cert-file", f"{flag}cert-key-file", f"{flag}{ca}"
    return [
        (cert, f"{field}cert_file", str, env_of(cert), cert_help),
        (key, f"{field}cert_key_file", str, env_of(key), f"PEM key of {cert}"),
        (bundle, ca_field or field + ca.replace("-", "_"), str, env_of(bundle), ca_help),
    ]


def server_flags(role: str, auth_help: str) -> list[Flag]:
    """`--<role>.auth-keys` (explained by `auth_help`) and the server's TLS rows."""
    auth = f"--{role}.auth-keys"
    return [
        (auth, "auth_keys", str, env_of(auth), auth_help),
        *tls_flags(f"--{role}.server-", "server_",
                   "PEM certificate the server presents (turns on TLS)",
                   "PEM CA bundle; when set, clients must present a certificate it signed"),
    ]


ETCD_LOG_FLAGS: list[Flag] = [
    *tls_flags("--etcd.", "etcd_", "PEM client certificate for an https:// Etcd",
               "PEM CA bundle that verifies an https:// Etcd (default: the system pool)",
               ca="trusted-ca-file"),
    ("--log.format", "log_format", str, "LOG_FORMAT",
     "json (one object a line: level, msg, time and the entry's fields), text (key=value "
     "pairs) or color (text, coloured)"),
]

DEBUG_FLAGS: list[Flag] = [
    ("--debug.port", "debug_port", int, "DEBUG_PORT",
     "Port serving the /debug/ paths (too), on every interface"),
    ("--debug.private", "debug_private", bool, "DEBUG_PRIVATE",
     "Serve the /debug/ paths only on --debug.port, not on the service port"),
]


@dataclass
class ServerSettings:
    """The settings of a broker or consumer process that both have, with the same defaults."""

    host: str = ""
    port: int | str = 8080  # or unix:///path
    zone: str = "local"
    id: str = ""
    http_port: int | None = None  # None: HTTP shares the service port
    auth_keys: str = ""
    server_cert_file: str = ""
    server_cert_key_file: str = ""
    server_ca_file: str = ""
    peer_cert_file: str = ""
    peer_cert_key_file: str = ""
    peer_ca_file: str = ""
    etcd_address: str = "http://localhost:2379"
    etcd_lease: float = Duration(20)
    log_level: str = "warn"
    allow_origin: list[str] = field(default_factory=list)
    max_grpc_recv_size: int = 4 * 1024 * 1024
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
        """The advertised URL: https when this process serves TLS; a unix:// port as it is."""
        if isinstance(port, str):
            return port
        scheme = "https" if self.server_cert_file else "http"
        return f"{scheme}://{self.host or socket.gethostname()}:{port}"


class EtcdSettings(Protocol):
    etcd_cert_file: str
    etcd_cert_key_file: str
    etcd_trusted_ca_file: str


def etcd_tls(config: EtcdSettings) -> ClientTLS:
    """The files of `--etcd.cert-file` and friends, for an https Etcd."""
    return ClientTLS(config.etcd_cert_file, config.etcd_cert_key_file,
                     config.etcd_trusted_ca_file)
