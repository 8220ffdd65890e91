"""Checks of server flag values shared by brokers and consumers (see `parse_flags`).

Each takes a flag's value and says what is wrong with it, or returns None:
values that would otherwise be taken silently (a port wrapped modulo 65536,
an unknown log level read as `warn`) or fail only later, deep in start-up.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from gazette_core.broker.client.channel import endpoints_of
from gazette_core.errors import GazetteError
from gazette_core.keyspace.etcd_util import host_port
from gazette_core.server.auth import parse_keys
from gazette_core.server.listen import unix_path
from gazette_core.server.process import LEVELS

MAX_PORT = 65535
# gRPC keeps message sizes in a signed 32-bit integer.
MAX_GRPC_MESSAGE = 2**31 - 1
LOG_FORMATS = ("json", "text", "color")


def port(value: int) -> str | None:
    """A TCP port: 0 (any free one) to 65535."""
    return None if 0 <= value <= MAX_PORT else f"not a port (0 to {MAX_PORT}; 0: any free one)"


def service_port(value: int | str) -> str | None:
    """A TCP port (see `port`), or a unix socket as unix:///absolute/path."""
    path = unix_path(value)
    if path is None:
        return port(int(value))
    if not path.startswith("/") or path == "/":
        return "a unix socket must be given as unix:///absolute/path"
    return None


def port_or_none(value: int | None) -> str | None:
    """Unset, a TCP port, or -1 for no server at all."""
    if value is None or value == -1 or 0 <= value <= MAX_PORT:
        return None
    return f"not a port (0 to {MAX_PORT}; 0: any free one; -1: none)"


def optional_port(value: int | None) -> str | None:
    """Unset, or a TCP port."""
    return None if value is None else port(value)


def log_level(value: str) -> str | None:
    if value.lower() in LEVELS:
        return None
    return "unknown log level (trace, debug, info, warn, error or fatal)"


def etcd_prefix(value: str) -> str | None:
    """Empty (a default applies) or an absolute key path."""
    if not value or value.startswith("/"):
        return None
    return "an Etcd prefix must begin with '/'"


def etcd_address(value: str) -> str | None:
    try:
        host_port(value)
    except ValueError as exc:
        return str(exc)
    return None


def broker_address(value: str) -> str | None:
    """One or more broker endpoints, comma-separated."""
    try:
        endpoints_of(value)
    except GazetteError as exc:
        return str(exc)
    return None


def directory(value: str) -> str | None:
    """Empty (a default applies), a directory, or a path where one can be created."""
    if value and os.path.exists(value) and not os.path.isdir(value):
        return "exists and is not a directory"
    return None


def auth_keys(value: str) -> str | None:
    """Empty (no authorization), or base64 keys separated by commas or whitespace."""
    try:
        parse_keys(value)
    except GazetteError as exc:
        return str(exc)
    return None


def not_negative(value: float) -> str | None:
    return None if value >= 0 else "must not be negative"


def lease(value: float) -> str | None:
    """An Etcd lease time-to-live: Etcd grants whole seconds, at least one."""
    return None if value >= 1 else "an Etcd lease lasts at least 1s"


def grpc_message_size(value: int) -> str | None:
    if 0 < value <= MAX_GRPC_MESSAGE:
        return None
    return f"not a gRPC message size (1 to {MAX_GRPC_MESSAGE} bytes)"


def log_format(value: str) -> str | None:
    return None if value in LOG_FORMATS else f"unknown log format ({', '.join(LOG_FORMATS)})"


# Checks of the flags in common_flags.
COMMON: dict[str, Callable[[Any], str | None]] = {
    "port": service_port, "http_port": port_or_none, "debug_port": optional_port,
    "log_level": log_level, "etcd_address": etcd_address, "auth_keys": auth_keys,
    "etcd_lease": lease, "watch_delay": not_negative,
    "max_grpc_recv_size": grpc_message_size, "log_format": log_format,
}
