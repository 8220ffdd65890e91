"""TLS credentials from PEM files: for a serving broker, and for clients dialing https.

A server presents its certificate and key; given a CA bundle it also
requires each client to present a certificate that CA signed (mutual TLS).
A client verifies servers with its CA bundle (the system pool without one)
and presents its own certificate when it has one.
"""

from __future__ import annotations

import ssl
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
    _check_loads(cert_file, key_file, ca_file)
    return grpc.ssl_server_credentials([pair], root_certificates=root,
                                       require_client_auth=root is not None)


def _check_loads(cert_file: str, key_file: str, ca_file: str) -> None:
    """Refuse files that are not PEM, or a key that does not match its certificate.

    gRPC takes any bytes here and fails only later, as it binds the port, with
    a message about the address instead of the files.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cert_file, key_file)
    except (ssl.SSLError, OSError) as exc:
        raise TLSConfigError(f"TLS certificate {cert_file!r} and key {key_file!r} do not "
                             f"load as a PEM pair: {_ssl_reason(exc)}") from None
    if ca_file:
        try:
            context.load_verify_locations(cafile=ca_file)
        except (ssl.SSLError, OSError) as exc:
            raise TLSConfigError(f"TLS CA file {ca_file!r} does not load as PEM "
                                 f"certificates: {_ssl_reason(exc)}") from None


def _ssl_reason(exc: Exception) -> str:
    if isinstance(exc, ssl.SSLError):
        return "not PEM, or the key does not match the certificate"
    return str(getattr(exc, "strerror", None) or exc)


def client_credentials(tls: ClientTLS) -> grpc.ChannelCredentials:
    """Channel credentials for an https endpoint."""
    pair = _pair(tls.cert_file, tls.key_file, "client")
    root = _read(tls.ca_file, "CA file") if tls.ca_file else None
    key, cert = pair if pair is not None else (None, None)
    return grpc.ssl_channel_credentials(root_certificates=root, private_key=key,
                                        certificate_chain=cert)


def server_ssl_context(cert_file: str, key_file: str, ca_file: str = "") -> ssl.SSLContext | None:
    """TLS of an HTTPS server: its certificate; client certificates verified with `ca_file`.

    None without a certificate. It speaks HTTP/1.1 only: a client offering both
    HTTP/2 and HTTP/1.1 (a browser, curl) settles on HTTP/1.1.
    """
    if not cert_file:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    if ca_file:
        context.load_verify_locations(ca_file)
        context.verify_mode = ssl.CERT_REQUIRED
    context.set_alpn_protocols(["http/1.1"])
    return context
