"""Brokers and consumers, as real processes, serve gRPC and HTTP on their one service port.

Each is started with its service port alone (no HTTP port): gRPC calls and
HTTP requests (the content gateway, the /debug/ paths, an application's
routes) all go to the endpoint it advertises.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from pathlib import Path

import aetcd
import aiohttp

from gazette_core.broker.client.channel import ClientConfig, close_channels, dial, journal_stub
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol import consumer_pb2_grpc as cpb_grpc
from gazette_core.server.tls import ClientTLS
from gazette_core.testing.broker import journal_spec
from gazette_core.testing.etcd import EtcdServer, free_port
from tests.broker.support import create
from tests.server.certs import TestCA
from tests.server.process_support import gazette

APP = '''
from aiohttp import web

class App:
    def new_store(self, shard, recorder): ...
    def new_message(self, spec): ...
    def consume_message(self, shard, store, envelope, publisher): ...
    def finalize_txn(self, shard, store, publisher): ...

    def init_application(self, args):
        async def hello(request):
            return web.Response(text="hello from the app")
        args.http_routes.append(web.get("/hello", hello))
'''


def broker_argv(etcd: EtcdServer, root: Path, port: str, *flags: str) -> list[str]:
    return ["serve", "--broker.port", port, "--broker.host", "127.0.0.1",
            "--broker.id", "one-port", "--broker.file-root", str(root),
            "--etcd.address", etcd.endpoint, *flags]


async def check_debug_paths(http: aiohttp.ClientSession, base: str, pid: int) -> None:
    """The /debug/ paths answer on `base` as a process numbered `pid` serves them."""
    async with http.get(f"{base}/debug/ready") as resp:
        assert (resp.status, await resp.read()) == (200, b"")
    for path in ("/debug/metrics", "/metrics"):
        async with http.get(f"{base}{path}") as resp:
            assert resp.status == 200
            assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            assert "# TYPE python_gc_objects_collected_total counter" in await resp.text()
    async with http.get(f"{base}/debug/tasks") as resp:
        tasks = await resp.text()
        assert resp.status == 200 and " asyncio tasks\n" in tasks
        assert "task front " in tasks  # the service port's listener, and what it awaits
        assert "in _accept" in tasks
    async with http.get(f"{base}/debug/vars") as resp:
        figures = json.loads(await resp.text())
        assert figures["process"]["pid"] == pid
        assert figures["process"]["open_fds"] > 0 and figures["process"]["threads"] > 0
        assert len(figures["gc"]["count"]) == 3 and figures["gc"]["objects"] > 0
    async with http.get(f"{base}/debug/pprof/") as resp:
        assert resp.status == 200 and 'href="/debug/tasks"' in await resp.text()


async def test_a_broker_serves_grpc_and_http_on_its_one_port(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path) -> None:
    port = free_port()
    with gazette(*broker_argv(etcd_server, tmp_path, str(port))) as broker:
        assert broker.endpoint == f"http://127.0.0.1:{port}"
        stub = journal_stub(broker.endpoint)
        await create(stub, journal_spec("one/port"))
        listed = [r async for r in stub.List(pb.ListRequest())]
        assert [j.spec.name for j in listed[0].journals] == ["one/port"]
        async with aiohttp.ClientSession() as http:
            async with http.put(f"{broker.endpoint}/one/port", data=b"over http") as resp:
                assert resp.status == 204
            async with http.get(f"{broker.endpoint}/one/port?offset=0&block=false") as resp:
                assert (resp.status, await resp.read()) == (206, b"over http")
            await check_debug_paths(http, broker.endpoint, broker.proc.pid)
        await close_channels()


async def test_a_consumer_serves_grpc_its_routes_and_debug_on_its_one_port(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path) -> None:
    (tmp_path / "one_port_app.py").write_text(APP)
    port = free_port()
    with gazette("consumer", "--app", "one_port_app:App", "--consumer.port", str(port),
                 "--consumer.host", "127.0.0.1", "--consumer.id", "one-port",
                 "--consumer.data-dir", str(tmp_path), "--etcd.address", etcd_server.endpoint,
                 "--etcd.prefix", "/one-port", "--broker.address", "http://127.0.0.1:1",
                 path=tmp_path) as consumer:
        assert consumer.endpoint == f"http://127.0.0.1:{port}"
        listed = await cpb_grpc.ShardStub(dial(consumer.endpoint)).List(cpb.ListRequest())
        assert (listed.status, list(listed.shards)) == (cpb.OK, [])
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{consumer.endpoint}/hello") as resp:
                assert (resp.status, await resp.text()) == (200, "hello from the app")
            await check_debug_paths(http, consumer.endpoint, consumer.proc.pid)
        await close_channels()


async def test_a_unix_socket_port_serves_grpc_and_http(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path) -> None:
    url = f"unix://{tmp_path}/broker.sock"
    with gazette(*broker_argv(etcd_server, tmp_path, url)) as broker:
        assert broker.endpoint == url  # advertised as it is listened on
        stub = journal_stub(url)
        await create(stub, journal_spec("unix/port"))
        connector = aiohttp.UnixConnector(path=f"{tmp_path}/broker.sock")
        async with aiohttp.ClientSession(connector=connector) as http:
            async with http.put("http://broker/unix/port", data=b"over a unix socket") as resp:
                assert resp.status == 204
            async with http.get("http://broker/unix/port?offset=0&block=false") as resp:
                assert (resp.status, await resp.read()) == (206, b"over a unix socket")
            async with http.get("http://broker/debug/ready") as resp:
                assert resp.status == 200
        await close_channels()
    assert not (tmp_path / "broker.sock").exists()


async def test_debug_private_keeps_debug_off_the_service_port_and_debug_port_serves_it(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path) -> None:
    port, debug = free_port(), free_port()
    with gazette(*broker_argv(etcd_server, tmp_path, str(port), "--debug.private",
                              "--debug.port", str(debug))) as broker:
        async with aiohttp.ClientSession() as http:
            for path in ("/debug/ready", "/debug/metrics", "/debug/vars", "/metrics"):
                async with http.get(f"{broker.endpoint}{path}") as resp:
                    assert resp.status == 404, path
            for path in ("/debug/ready", "/debug/metrics", "/debug/tasks", "/debug/vars"):
                async with http.get(f"http://127.0.0.1:{debug}{path}") as resp:
                    assert resp.status == 200, path
            async with http.get(f"http://127.0.0.1:{debug}/some/journal") as resp:
                assert resp.status == 404  # no content gateway there
        listed = [r async for r in journal_stub(broker.endpoint).List(pb.ListRequest())]
        assert listed[0].status == pb.OK
        await close_channels()


async def test_a_tls_broker_serves_grpc_and_https_on_its_one_port(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path) -> None:
    ca = TestCA(tmp_path)
    cert = ca.issue("one-port")
    port = free_port()
    with gazette(*broker_argv(etcd_server, tmp_path, str(port),
                              "--broker.server-cert-file", cert.cert,
                              "--broker.server-cert-key-file", cert.key,
                              "--broker.peer-ca-file", ca.pem.cert)) as broker:
        assert broker.endpoint == f"https://127.0.0.1:{port}"
        stub = journal_stub(broker.endpoint, ClientConfig(tls=ClientTLS(ca_file=ca.pem.cert)))
        await create(stub, journal_spec("tls/port"))
        trust = ssl.create_default_context(cafile=ca.pem.cert)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=trust)) as http:
            async with http.put(f"{broker.endpoint}/tls/port", data=b"over https") as resp:
                assert resp.status == 204
            async with http.get(f"{broker.endpoint}/tls/port?offset=0&block=false") as resp:
                assert (resp.status, await resp.read()) == (206, b"over https")
        # A client offering HTTP/2 beside HTTP/1.1, as browsers and curl do, gets HTTP/1.1.
        trust.set_alpn_protocols(["h2", "http/1.1"])
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=trust)
        assert writer.get_extra_info("ssl_object").selected_alpn_protocol() == "http/1.1"
        writer.write(b"GET /debug/ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert (await reader.read()).startswith(b"HTTP/1.1 200 OK\r\n")
        writer.close()
        await close_channels()
