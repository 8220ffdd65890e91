"""Flags every server process has, brokers and consumers alike: service limits, TLS, Etcd, logging.

Each process's config module splices these rows into its own table; the
config dataclasses carry the fields under the same names. `tls_flags` makes
the three rows of each certificate, key and CA bundle (server, peers,
brokers, Etcd), with the environment variables named after the flags.
"""

from __future__ import annotations

from typing import Protocol

from gazette_core.server.flags import Duration, Flag
from gazette_core.server.tls import ClientTLS


def service_flags(role: str, env: str) -> list[Flag]:
    """The `--<role>.*` rows of a gRPC service's limits and Etcd watch, env vars `<env>_*`."""
    return [
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


class EtcdSettings(Protocol):
    etcd_cert_file: str
    etcd_cert_key_file: str
    etcd_trusted_ca_file: str


def etcd_tls(config: EtcdSettings) -> ClientTLS:
    """The files of `--etcd.cert-file` and friends, for an https Etcd."""
    return ClientTLS(config.etcd_cert_file, config.etcd_cert_key_file,
                     config.etcd_trusted_ca_file)
