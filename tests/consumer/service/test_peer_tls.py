"""--consumer.peer-cert-file and friends: consumers serving mutual TLS proxy to each other.

Two ConsumerServices serve TLS and require client certificates their CA
signed. Stat through the process that is not the shard's primary is proxied
to the primary: with peer certificates that works; with only the CA file the
primary refuses the proxying process's handshake.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

import aetcd
import pytest
import pytest_asyncio

from gazette_core.broker.client.channel import ClientConfig, close_channels
from gazette_core.consumer.api.client import apply_shards, list_shards, shard_stub, stat_shard
from gazette_core.consumer.config import ConsumerConfig
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.service import ConsumerService
from gazette_core.errors import GazetteError
from gazette_core.server.tls import ClientTLS
from gazette_core.testing.broker import broker_config, journal_stub, running_broker
from gazette_core.testing.etcd import EtcdServer
from tests.consumer.runtime.apps import Counter
from tests.consumer.runtime.support import create_journals, shard_spec
from tests.consumer.runtime.support import eventually as until
from tests.server.certs import TestCA

SHARD = "shard-000"


@pytest_asyncio.fixture(loop_scope="session")
async def broker(etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path
                 ) -> AsyncIterator[str]:
    (tmp_path / "root").mkdir()
    config = broker_config(etcd_server.endpoint, str(tmp_path / "root"))
    async with running_broker(config) as running, journal_stub(running.endpoint) as stub:
        await create_journals(stub)
        yield running.endpoint
    await close_channels()


def _config(etcd: EtcdServer, broker: str, tmp_path: Path, ca: TestCA, name: str,
            with_peer_certs: bool) -> ConsumerConfig:
    server, peer = ca.issue(f"{name}-server"), ca.issue(f"{name}-peer", server=False)
    # Without its certificate, a process still trusts its peers' (the CA file).
    peer_flags = dict(peer_cert_file=peer.cert, peer_cert_key_file=peer.key) \
        if with_peer_certs else {}
    return ConsumerConfig(app="tests:Counter", host="127.0.0.1", port=0, http_port=-1,
                          id=name, etcd_address=etcd.endpoint, etcd_prefix="/peer.tls",
                          etcd_lease=5, broker_address=broker, data_dir=str(tmp_path / name),
                          watch_delay=0, server_cert_file=server.cert,
                          server_cert_key_file=server.key, server_ca_file=ca.pem.cert,
                          peer_ca_file=ca.pem.cert, **peer_flags)


@pytest.mark.parametrize("with_peer_certs", [True, False])
async def test_stat_is_proxied_to_the_primary_with_the_peer_certificate(
        etcd_server: EtcdServer, broker: str, tmp_path: Path, with_peer_certs: bool) -> None:
    ca = TestCA(tmp_path)
    client = ca.issue("test-client", server=False)
    tls = ClientConfig(tls=ClientTLS(client.cert, client.key, ca.pem.cert))
    async with AsyncExitStack() as stack:
        services = []
        for name in ("peer-1", "peer-2"):
            service = ConsumerService(
                _config(etcd_server, broker, tmp_path, ca, name, with_peer_certs), Counter())
            await service.start()
            stack.push_async_callback(service.stop, 2.0)
            services.append(service)
        await apply_shards(shard_stub(services[0].endpoint, tls), [cpb.ApplyRequest.Change(
            upsert=shard_spec(SHARD, hot_standbys=0, max_s=0.2), expect_mod_revision=0)])

        async def primary() -> str | None:
            """The primary's id, once both processes know it."""
            known = set()
            for service in services:
                listed = await list_shards(shard_stub(service.endpoint, tls))
                route = listed.shards[0].route if listed.shards else None
                if route is None or route.primary < 0:
                    return None
                known.add(route.members[route.primary].suffix)
            return known.pop() if len(known) == 1 else None
        suffix = await until(primary, 30)
        at, other = services if services[0].config.id == suffix else services[::-1]
        through = shard_stub(other.endpoint, tls)
        if with_peer_certs:
            stat = await stat_shard(through, SHARD)
            assert stat.status == cpb.OK
            assert stat.header.process_id == at.process_id
        else:
            with pytest.raises(GazetteError) as err:
                await stat_shard(through, SHARD)
            # The primary refused the handshake of a peer with no certificate.
            assert str(err.value).startswith(
                "Shard Stat: UNAVAILABLE: backing call failed with UNAVAILABLE: "), err.value
