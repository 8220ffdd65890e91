"""Telling gRPC from HTTP by a connection's first bytes: the preface, or TLS ALPN offers."""

from __future__ import annotations

import ssl

import pytest

from gazette_core.server.sniff import PREFACE, Kind, alpn_offered, classify


def client_hello(alpn: list[str]) -> bytes:
    """The first flight of a real TLS client offering `alpn`."""
    context = ssl.create_default_context()
    if alpn:
        context.set_alpn_protocols(alpn)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="broker.example")
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


@pytest.mark.parametrize(("alpn", "kind"), [
    (["h2"], Kind.GRPC),  # gRPC clients offer HTTP/2 alone
    (["grpc-exp", "h2"], Kind.GRPC),
    (["h2", "http/1.1"], Kind.HTTP),  # browsers and curl: served HTTP/1.1
    (["http/1.1"], Kind.HTTP),
    ([], Kind.HTTP),
])
def test_tls_clients_are_told_apart_by_what_they_offer(alpn: list[str], kind: Kind) -> None:
    hello = client_hello(alpn)
    assert alpn_offered(hello[5:]) == alpn
    assert classify(hello, tls=True) is kind


def test_a_partial_tls_record_waits_for_more() -> None:
    hello = client_hello(["h2"])
    assert classify(hello[:3], tls=True) is None
    assert classify(hello[:-1], tls=True) is None


def test_cleartext_preface_is_grpc_and_anything_else_http() -> None:
    assert classify(PREFACE + b"\x00\x00", tls=False) is Kind.GRPC
    assert classify(PREFACE[:10], tls=False) is None  # more must come
    assert classify(b"GET /debug/ready HTTP/1.1\r\n", tls=False) is Kind.HTTP
    assert classify(b"PRI * HTTP/1.1", tls=False) is Kind.HTTP
    assert classify(b"\x16\x03\x01", tls=False) is Kind.HTTP  # TLS to a cleartext port


def test_a_malformed_hello_offers_nothing() -> None:
    assert alpn_offered(b"\x01\x00\x00") == []
    assert classify(b"\x16\x03\x01\x00\x04\x01\x00\x00\x00", tls=True) is Kind.HTTP
