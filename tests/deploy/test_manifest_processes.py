"""Our broker and consumer run as the rendered manifests say, and answer where they point.

Each process gets exactly the command line and environment the rendered
test overlay gives its container (see tests/deploy/pods.py for what stands in
for Kubernetes), with Etcd and the brokers' Service replaced by the test's own.
It must then answer the readiness probe on the one service port, serve gRPC on
that same port, be scraped at the annotated path, register under the Etcd
prefix its environment composes, log JSON lines, and stop cleanly on SIGTERM.
"""

from __future__ import annotations

from pathlib import Path

import aetcd

from gazette_core.broker.client.channel import close_channels, journal_stub
from gazette_core.broker.client.journals import list_journals
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.api.client import list_shards
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.testing.etcd import EtcdServer
from tests.deploy.manifests import overlay
from tests.deploy.pods import POD_IP, Pod, get, json_log_lines, running, zone_of_node

OVERLAY = "deploy-stream-sum"


async def _member(etcd: aetcd.Client, pod: Pod, zone: str) -> bytes:
    """The value the process registered under its Etcd prefix, as a member of its zone."""
    got = await etcd.get(f"{pod.env['ETCD_PREFIX']}/members/{zone}#{pod.name}".encode())
    assert got is not None, pod.env["ETCD_PREFIX"]
    return bytes(got.value)


async def _scraped(pod: Pod) -> None:
    status, text = await get(pod.endpoint + pod.metrics_path)
    assert status == 200 and "# TYPE " in text


async def test_the_broker_serves_everything_on_its_one_port_as_its_manifest_says(
        etcd_server: EtcdServer, etcd: aetcd.Client, tmp_path: Path) -> None:
    services = {"ETCD_ADDRESS": etcd_server.endpoint}
    async with running(overlay(OVERLAY), "gazette", "gazette", "--broker.port", services,
                       tmp_path) as pod:
        try:
            zone = zone_of_node(tmp_path / "home")
            resp = await list_journals(journal_stub(pod.endpoint), pb.LabelSelector())
            assert resp.status == pb.Status.OK
            assert (resp.header.process_id.zone, resp.header.process_id.suffix) == (
                zone, pod.name)
            await _scraped(pod)
            assert pod.env["ETCD_PREFIX"] == "/gazette/cluster/stream-sum"
            spec = pb.BrokerSpec.FromString(await _member(etcd, pod, zone))
            assert spec.process_spec.endpoint == f"http://{POD_IP}:{pod.port}"
        finally:
            await close_channels()
    assert pod.exit_code == 0
    assert json_log_lines(pod)


async def test_the_consumer_serves_everything_on_its_one_port_as_its_manifest_says(
        etcd_server: EtcdServer, etcd: aetcd.Client, tmp_path: Path) -> None:
    objs = overlay(OVERLAY)
    services = {"ETCD_ADDRESS": etcd_server.endpoint}
    async with running(objs, "gazette", "gazette", "--broker.port", services,
                       tmp_path / "broker") as broker:
        services["BROKER_ADDRESS"] = broker.endpoint
        async with running(objs, "consumer-stream-sum", "consumer", "--consumer.port",
                           services, tmp_path / "consumer") as pod:
            try:
                zone = zone_of_node(tmp_path / "consumer" / "home")
                resp = await list_shards(pod.endpoint, "")
                assert resp.status == cpb.Status.OK
                assert (resp.header.process_id.zone, resp.header.process_id.suffix) == (
                    zone, pod.name)
                await _scraped(pod)
                assert pod.env["ETCD_PREFIX"] == "/gazette/consumers/summer-stream-sum"
                spec = cpb.ConsumerSpec.FromString(await _member(etcd, pod, zone))
                assert spec.process_spec.endpoint == f"http://{POD_IP}:{pod.port}"
            finally:
                await close_channels()
        assert pod.exit_code == 0
        assert json_log_lines(pod)
    assert broker.exit_code == 0
