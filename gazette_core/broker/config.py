"""Broker configuration: Gazette's `gazette serve` flags and their environment variables."""

from __future__ import annotations

import argparse
import os
import socket
from dataclasses import dataclass, fields


@dataclass
class BrokerConfig:
    """Settings of one broker process; field names follow the flag names."""

    host: str = ""
    port: int = 8080
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

    @property
    def suffix(self) -> str:
        return self.id or socket.gethostname()

    def endpoint(self, port: int) -> str:
        return f"http://{self.host or socket.gethostname()}:{port}"


# (flag, field, type, environment variable, help)
FLAGS: list[tuple[str, str, type, str, str]] = [
    ("--broker.host", "host", str, "BROKER_HOST", "Addressable, advertised hostname"),
    ("--broker.port", "port", int, "BROKER_PORT", "Service port for gRPC (0: any free)"),
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
]


def parse_args(argv: list[str]) -> BrokerConfig:
    """Parse `gazette serve` flags; each flag falls back to its environment variable."""
    defaults = BrokerConfig()
    parser = argparse.ArgumentParser(prog="gazette serve", description="Serve as a Gazette broker")
    for flag, name, kind, env, text in FLAGS:
        default = os.environ.get(env, getattr(defaults, name))
        parser.add_argument(flag, dest=name, type=kind, default=kind(default),
                            help=f"{text} [${env}] (default {getattr(defaults, name)!r})")
    ns = parser.parse_args(argv)
    return BrokerConfig(**{f.name: getattr(ns, f.name) for f in fields(BrokerConfig)})
