"""TLS credentials from PEM files: for a serving broker, and for clients dialing https.

A server presents its certificate and key; given a CA bundle it also
requires each client to present a certificate that CA signed (mutual TLS).
A client verifies servers with its CA bundle (the system pool without one)
and presents its own certificate when it has one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import grpc

from gazette_core.errors import GazetteError


class TLSConfigError(GazetteError):
    """A certificate, key or CA file is missing or unreadable, or only half a pair is given."""


@dataclass(frozen=True)
class ClientTLS:
    """PEM files a client uses for `https://` endpoints; empty means not set."""

    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise TLSConfigError(f"cannot read TLS {what} {path!r}: {exc.strerror or exc}") from None


def _pair(cert_file: str, key_file: str, who: str) -> tuple[bytes, bytes] | None:
    if bool(cert_file) != bool(key_file):
        raise TLSConfigError(f"{who} TLS needs both a certificate and its key file "
                             f"(got certificate {cert_file!r}, key {key_file!r})")
    if not cert_file:
        return None
    return _read(key_file, "key file"), _read(cert_file, "certificate file")


def server_credentials(cert_file: str, key_file: str, ca_file: str = ""
                       ) -> grpc.ServerCredentials | None:
    """Credentials to serve TLS, or None when no certificate is configured.

    With `ca_file`, clients must present a certificate signed by it.
    """
    pair = _pair(cert_file, key_file, "server")
    if pair is None:
        if ca_file:
            raise TLSConfigError("a server CA file requires a server certificate and key")
        return None
    root = _read(ca_file, "CA file") if ca_file else None
    return grpc.ssl_server_credentials([pair], root_certificates=root,
                                       require_client_auth=root is not None)


def client_credentials(tls: ClientTLS) -> grpc.ChannelCredentials:
    """Channel credentials for an https endpoint."""
    pair = _pair(tls.cert_file, tls.key_file, "client")
    root = _read(tls.ca_file, "CA file") if tls.ca_file else None
    key, cert = pair if pair is not None else (None, None)
    return grpc.ssl_channel_credentials(root_certificates=root, private_key=key,
                                        certificate_chain=cert)
