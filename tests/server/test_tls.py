"""Brokers serving TLS: https endpoints, client certificates, and peers replicating over TLS."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

import aetcd
import grpc
import pytest
import pytest_asyncio

from gazette_core.broker.client.channel import ClientConfig, close_channels, journal_stub
from gazette_core.broker.config import BrokerConfig
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.service import Broker
from gazette_core.server.tls import ClientTLS, TLSConfigError, client_credentials
from gazette_core.testing.broker import broker_config, journal_spec, running_broker
from gazette_core.testing.etcd import EtcdServer
from tests.broker.cluster import route_with
from tests.broker.support import append, content, create
from tests.server.certs import TestCA


@pytest.fixture
def ca(tmp_path: Path) -> TestCA:
    return TestCA(tmp_path)


@pytest_asyncio.fixture(loop_scope="session", autouse=True)
async def _fresh_channels() -> AsyncIterator[None]:
    yield
    await close_channels()  # channels to this test's brokers end with it


def _tls_config(etcd_server: EtcdServer, tmp_path: Path, ca: TestCA, name: str,
                mutual: bool) -> BrokerConfig:
    """A broker serving TLS with its own certificate, and a peer certificate for its calls."""
    server, peer = ca.issue(f"{name}-server"), ca.issue(f"{name}-peer")
    return broker_config(etcd_server.endpoint, str(tmp_path), id=name,
                         server_cert_file=server.cert, server_cert_key_file=server.key,
                         server_ca_file=ca.pem.cert if mutual else "",
                         peer_cert_file=peer.cert, peer_cert_key_file=peer.key,
                         peer_ca_file=ca.pem.cert)


async def test_a_tls_broker_serves_appends_and_reads_over_https(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path, ca: TestCA) -> None:
    config = _tls_config(etcd_server, tmp_path, ca, "tls-1", mutual=False)
    async with running_broker(config) as broker:
        assert broker.endpoint == f"https://127.0.0.1:{broker.port}"
        stub = journal_stub(broker.endpoint, ClientConfig(tls=ClientTLS(ca_file=ca.pem.cert)))

        await create(stub, journal_spec("tls/one"))
        resp = await append(stub, "tls/one", b"over tls\n")

        assert (resp.status, resp.commit.end) == (pb.OK, 9)
        assert await content(stub, "tls/one") == b"over tls\n"


async def test_client_certificates_are_required_with_a_server_ca(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path, ca: TestCA) -> None:
    config = _tls_config(etcd_server, tmp_path, ca, "tls-m", mutual=True)
    client = ca.issue("client", server=False)
    async with running_broker(config) as broker:
        anonymous = journal_stub(broker.endpoint, ClientConfig(tls=ClientTLS(
            ca_file=ca.pem.cert)))
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await anonymous.Apply(pb.ApplyRequest(), timeout=10)
        # TLS 1.3 completes the client's side of the handshake first, so the
        # refusal arrives as the server closing the connection.
        assert (caught.value.code(), caught.value.details()) == (
            grpc.StatusCode.UNAVAILABLE, "failed to connect to all addresses; last error: "
            f"UNAVAILABLE: ipv4:127.0.0.1:{broker.port}: Socket closed")

        known = journal_stub(broker.endpoint, ClientConfig(tls=ClientTLS(
            client.cert, client.key, ca.pem.cert)))
        resp = await known.Apply(pb.ApplyRequest(), timeout=10)
        assert resp.status == pb.OK


async def test_peers_replicate_and_proxy_over_mutual_tls(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path, ca: TestCA) -> None:
    client = ca.issue("client", server=False)
    tls = ClientConfig(tls=ClientTLS(client.cert, client.key, ca.pem.cert))
    async with AsyncExitStack() as stack:
        brokers: list[Broker] = []
        for i in range(2):
            config = _tls_config(etcd_server, tmp_path, ca, f"tls-peer-{i}", mutual=True)
            brokers.append(await stack.enter_async_context(
                running_broker(config)))
        stubs = [journal_stub(b.endpoint, tls) for b in brokers]
        await create(stubs[0], journal_spec("tls/two", replication=2))
        routes = [await route_with(stub, "tls/two", 2) for stub in stubs]
        assert routes[0] == routes[1]
        route = routes[0]

        for i, stub in enumerate(stubs):  # one of the two proxies to the primary
            assert (await append(stub, "tls/two", f"from {i}\n".encode())).status == pb.OK
        for member in route.members:
            stub = stubs[[b.process_id for b in brokers].index(member)]
            assert await content(stub, "tls/two", member) == b"from 0\nfrom 1\n"


def test_half_a_certificate_pair_is_refused(tmp_path: Path, ca: TestCA) -> None:
    pem = ca.issue("half")

    with pytest.raises(TLSConfigError) as caught:
        client_credentials(ClientTLS(cert_file=pem.cert))
    assert str(caught.value) == (f"client TLS needs both a certificate and its key file "
                                 f"(got certificate {pem.cert!r}, key '')")
    with pytest.raises(TLSConfigError) as caught:
        client_credentials(ClientTLS(ca_file=str(tmp_path / "missing.crt")))
    assert str(caught.value) == (f"cannot read TLS CA file {str(tmp_path / 'missing.crt')!r}: "
                                 "No such file or directory")
