"""Flags every server process has, brokers and consumers alike: service limits, Etcd, logging.

Each process's config module splices these rows into its own table; the
config dataclasses carry the fields under the same names.
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


ETCD_LOG_FLAGS: list[Flag] = [
    ("--etcd.cert-file", "etcd_cert_file", str, "ETCD_CERT_FILE",
     "PEM client certificate for an https:// Etcd"),
    ("--etcd.cert-key-file", "etcd_cert_key_file", str, "ETCD_CERT_KEY_FILE",
     "PEM key of --etcd.cert-file"),
    ("--etcd.trusted-ca-file", "etcd_trusted_ca_file", str, "ETCD_TRUSTED_CA_FILE",
     "PEM CA bundle that verifies an https:// Etcd (default: the system pool)"),
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
