"""Brokers and consumers of an https Etcd that requires client certificates (`--etcd.cert-file`).

A real etcd serving TLS with `--client-cert-auth`, and real `gazette serve`
and `gazette consumer` processes: given the certificate flags (or their
environment variables) they start, announce themselves and serve; without a
client certificate they exit with one line saying Etcd could not be reached.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aetcd
import pytest
import pytest_asyncio
from aetcd import rpc

from gazette_core.broker.client.channel import close_channels, journal_stub
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.keyspace.etcd_util import connect, prefix_range_end
from gazette_core.server.tls import ClientTLS
from gazette_core.testing.etcd import EtcdServer, EtcdTLS
from tests.server.certs import TestCA

ROOT = Path(__file__).resolve().parents[2]
APP = '''
class Fine:
    def new_store(self, shard, recorder): ...
    def new_message(self, spec): ...
    def consume_message(self, shard, store, envelope, publisher): ...
    def finalize_txn(self, shard, store, publisher): ...
'''


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> TestCA:
    return TestCA(tmp_path_factory.mktemp("etcd-tls"))


@pytest.fixture(scope="module")
def tls_etcd(ca: TestCA) -> Iterator[EtcdServer]:
    server = ca.issue("etcd-server", client=False)
    with EtcdServer(tls=EtcdTLS(server.cert, server.key, ca.pem.cert)) as etcd:
        yield etcd


@pytest_asyncio.fixture(loop_scope="session")
async def client(tls_etcd: EtcdServer, ca: TestCA) -> AsyncIterator[aetcd.Client]:
    pem = ca.issue("test-client", server=False)
    etcd = await connect(tls_etcd.endpoint, ClientTLS(pem.cert, pem.key, ca.pem.cert))
    yield etcd
    await etcd.kvstub.DeleteRange(rpc.DeleteRangeRequest(key=b"\0", range_end=b"\0"))
    await etcd.close()
    await close_channels()


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    (tmp_path / "tls_app.py").write_text(APP)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CONSUMER_", "BROKER_", "ETCD_", "LOG_"))}
    return {**env, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)]), **extra}


def _start(argv: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    """A gazette process, once it says it serves; and the endpoint it serves at."""
    proc = subprocess.Popen([sys.executable, "-m", "gazette_core", *argv],
                            stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stderr is not None
    deadline = time.monotonic() + 30
    while " serving at " not in (line := proc.stderr.readline()):
        if line == "" or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"did not start: {line}{proc.stderr.read()}")
    return proc, line.split(" serving at ")[1].strip()


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.stderr is not None
    return proc.stderr.read()


async def _members(etcd: aetcd.Client, prefix: str) -> list[str]:
    key = prefix.encode()
    resp = await etcd.kvstub.Range(rpc.RangeRequest(key=key, range_end=prefix_range_end(key)))
    return [kv.key.decode() for kv in resp.kvs]


async def test_a_broker_with_an_etcd_client_certificate_announces_and_serves(
        tls_etcd: EtcdServer, client: aetcd.Client, ca: TestCA, tmp_path: Path) -> None:
    pem = ca.issue("broker", server=False)
    proc, endpoint = _start(
        ["serve", "--etcd.address", tls_etcd.endpoint, "--etcd.cert-file", pem.cert,
         "--etcd.cert-key-file", pem.key, "--etcd.trusted-ca-file", ca.pem.cert,
         "--etcd.prefix", "/tls/brokers", "--broker.id", "tls-broker", "--broker.port", "0",
         "--broker.http-port", "-1", "--broker.host", "127.0.0.1",
         "--broker.file-root", str(tmp_path)], _env(tmp_path))
    try:
        assert await _members(client, "/tls/brokers/members/") == [
            "/tls/brokers/members/local#tls-broker"]
        call = journal_stub(endpoint).List(pb.ListRequest())
        listed = await call.read()
        call.cancel()
        assert listed.status == pb.OK
        assert listed.header.etcd.revision > 0
    finally:
        err = _stop(proc)
    assert "Traceback" not in err, err


async def test_a_consumer_with_etcd_tls_from_the_environment_announces_itself(
        tls_etcd: EtcdServer, client: aetcd.Client, ca: TestCA, tmp_path: Path) -> None:
    pem = ca.issue("consumer", server=False)
    env = _env(tmp_path, ETCD_CERT_FILE=pem.cert, ETCD_CERT_KEY_FILE=pem.key,
               ETCD_TRUSTED_CA_FILE=ca.pem.cert)
    proc, _ = _start(["consumer", "--app", "tls_app:Fine", "--etcd.address", tls_etcd.endpoint,
                      "--etcd.prefix", "/tls/consumers", "--consumer.id", "tls-consumer",
                      "--consumer.port", "0", "--consumer.http-port", "-1",
                      "--consumer.host", "127.0.0.1"], env)
    try:
        assert await _members(client, "/tls/consumers/members/") == [
            "/tls/consumers/members/local#tls-consumer"]
    finally:
        err = _stop(proc)
    assert "Traceback" not in err, err


@pytest.mark.parametrize("role", ["serve", "consumer"])
def test_without_a_client_certificate_the_process_exits_with_one_line(
        tls_etcd: EtcdServer, ca: TestCA, tmp_path: Path, role: str) -> None:
    argv = ["serve", "--broker.port", "0", "--broker.http-port", "-1",
            "--broker.file-root", str(tmp_path)] if role == "serve" else [
        "consumer", "--app", "tls_app:Fine", "--consumer.id", "tls-consumer",
        "--consumer.port", "0", "--consumer.http-port", "-1", "--etcd.prefix", "/tls/consumers"]
    done = subprocess.run(
        [sys.executable, "-m", "gazette_core", *argv,
         "--etcd.address", tls_etcd.endpoint, "--etcd.trusted-ca-file", ca.pem.cert],
        capture_output=True, text=True, timeout=60, env=_env(tmp_path))
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    prog = "gazette" if role == "serve" else "gazette consumer"
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"{prog}: cannot reach etcd at {tls_etcd.endpoint}: "), lines[0]
