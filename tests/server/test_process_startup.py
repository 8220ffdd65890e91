"""`gazette consumer` and `gazette serve` refusing to start: one line, an exit status, no leftovers.

Real processes against a real etcd. Flags with values that cannot work are
usage errors (exit 2, before anything runs); failures while starting (an app
that cannot be created, a port in use, TLS files that are not PEM) exit 1.
Either way stderr holds exactly one line naming the problem, no traceback,
and the process leaves no key or lease in etcd behind.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import aetcd
import pytest
from aetcd import rpc

from gazette_core.testing.etcd import EtcdServer

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "/startup.test"

APPS = '''
class NeedsArgs:
    def __init__(self, x):
        self.x = x

class Raises:
    def __init__(self):
        raise RuntimeError("init boom")

class Fine:
    def new_store(self, shard, recorder): ...
    def new_message(self, spec): ...
    def consume_message(self, shard, store, envelope, publisher): ...
    def finalize_txn(self, shard, store, publisher): ...

class InitRaises(Fine):
    def init_application(self, args):
        raise SystemExit("init_application boom")
'''


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port another socket listens on."""
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


@pytest.fixture
def apps(tmp_path: Path) -> Path:
    (tmp_path / "startup_apps.py").write_text(APPS)
    (tmp_path / "broken_syntax.py").write_text("def f(:\n")
    (tmp_path / "garbage.pem").write_text("not a certificate\n")
    (tmp_path / "a-file").write_text("")
    return tmp_path


def gazette(apps: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(apps)])}
    for name in list(env):
        if name.startswith(("CONSUMER_", "BROKER_", "ETCD_", "LOG_")):
            del env[name]
    return subprocess.run([sys.executable, "-m", "gazette_core", *argv],
                          capture_output=True, text=True, timeout=60, env=env, cwd=apps)


def consumer(apps: Path, etcd: EtcdServer, *flags: str, app: str = "startup_apps:Fine"
             ) -> subprocess.CompletedProcess[str]:
    return gazette(apps, "consumer", "--app", app, "--consumer.id", "startup-1",
                   "--consumer.port", "0", "--consumer.http-port", "0",
                   "--etcd.address", etcd.endpoint, "--etcd.prefix", PREFIX, *flags)


def broker(apps: Path, etcd: EtcdServer, *flags: str) -> subprocess.CompletedProcess[str]:
    return gazette(apps, "serve", "--broker.id", "startup-1", "--broker.port", "0",
                   "--broker.http-port", "0", "--broker.file-root", str(apps / "fragments"),
                   "--etcd.address", etcd.endpoint, "--etcd.prefix", PREFIX, *flags)


async def assert_one_line(done: subprocess.CompletedProcess[str], code: int, *parts: str,
                          etcd: aetcd.Client) -> None:
    assert done.returncode == code, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    for part in parts:
        assert part in lines[0]
    keys = await etcd.kvstub.Range(rpc.RangeRequest(key=b"\0", range_end=b"\0",
                                                    count_only=True))
    leases = await etcd.leasestub.LeaseLeases(rpc.LeaseLeasesRequest())
    assert (keys.count, len(leases.leases)) == (0, 0), "left behind in etcd"


USAGE = [
    (("--consumer.port", "99999"), "--consumer.port 99999: not a port"),
    (("--consumer.port", "-5"), "--consumer.port -5: not a port"),
    (("--consumer.port", "65536"), "--consumer.port 65536: not a port"),
    (("--consumer.http-port", "70000"), "--consumer.http-port 70000: not a port"),
    (("--log.level", "LOUD"), "--log.level 'LOUD': unknown log level"),
    (("--etcd.prefix", "relative/prefix"), "--etcd.prefix 'relative/prefix': an Etcd prefix "
                                           "must begin with '/'"),
    (("--consumer.data-dir", "a-file"), "--consumer.data-dir 'a-file': exists and is not a "
                                        "directory"),
    (("--broker.address", "ftp://x"), "--broker.address 'ftp://x': invalid broker address"),
    (("--etcd.address", "http://[::1"), "--etcd.address 'http://[::1': unsupported etcd "
                                        "endpoint"),
    (("--consumer.auth-keys", "%%%"), "--consumer.auth-keys '%%%': auth key at index 0 is not "
                                      "valid base64"),
]


@pytest.mark.parametrize(("flags", "message"), USAGE, ids=lambda v: " ".join(v)
                         if isinstance(v, tuple) else None)
async def test_consumer_flags_that_cannot_work_are_usage_errors(
        apps: Path, etcd_server: EtcdServer, etcd: aetcd.Client, flags: tuple[str, ...],
        message: str) -> None:
    done = consumer(apps, etcd_server, *flags, app="startup_apps:NeedsArgs")
    await assert_one_line(done, 2, f"gazette consumer: error: {message}", etcd=etcd)


BROKER_USAGE = [
    (("--broker.port", "99999"), "--broker.port 99999: not a port"),
    (("--broker.http-port", "-7"), "--broker.http-port -7: not a port"),
    (("--broker.port", "unix://relative.sock"), "--broker.port 'unix://relative.sock': a unix "
                                               "socket must be given as unix:///absolute/path"),
    (("--debug.port", "70000"), "--debug.port 70000: not a port"),
    (("--log.level", "LOUD"), "--log.level 'LOUD': unknown log level"),
    (("--etcd.prefix", "relative"), "--etcd.prefix 'relative': an Etcd prefix must begin"),
    (("--etcd.address", "http://[::1"), "--etcd.address 'http://[::1': unsupported etcd"),
    (("--broker.file-root", "a-file"), "--broker.file-root 'a-file': exists and is not a "
                                       "directory"),
    (("--broker.auth-keys", "%%%"), "--broker.auth-keys '%%%': auth key at index 0 is not "
                                    "valid base64"),
]


@pytest.mark.parametrize(("flags", "message"), BROKER_USAGE, ids=lambda v: " ".join(v)
                         if isinstance(v, tuple) else None)
async def test_broker_flags_that_cannot_work_are_usage_errors(
        apps: Path, etcd_server: EtcdServer, etcd: aetcd.Client, flags: tuple[str, ...],
        message: str) -> None:
    await assert_one_line(broker(apps, etcd_server, *flags), 2,
                          f"gazette serve: error: {message}", etcd=etcd)


@pytest.mark.parametrize(("app", "message"), [
    ("startup_apps:NeedsArgs", "--app 'startup_apps:NeedsArgs': NeedsArgs() failed: "
                               "TypeError: "),
    ("startup_apps:Raises", "--app 'startup_apps:Raises': Raises() failed: RuntimeError: "
                            "init boom"),
    ("broken_syntax:App", "--app 'broken_syntax:App': importing 'broken_syntax' failed: "
                          "SyntaxError: "),
    ("startup_apps:InitRaises", "init_application: SystemExit: init_application boom"),
])
async def test_an_app_that_cannot_start_is_one_line(apps: Path, etcd_server: EtcdServer,
                                                    etcd: aetcd.Client, app: str,
                                                    message: str) -> None:
    done = consumer(apps, etcd_server, app=app)
    await assert_one_line(done, 1, f"gazette consumer: {message}", etcd=etcd)


@pytest.mark.parametrize("flag", ["--consumer.port", "--consumer.http-port"])
async def test_a_consumer_port_in_use_is_one_line(apps: Path, etcd_server: EtcdServer,
                                                  etcd: aetcd.Client, busy_port: int,
                                                  flag: str) -> None:
    done = consumer(apps, etcd_server, flag, str(busy_port))
    await assert_one_line(done, 1, f"{flag}: cannot listen on 0.0.0.0:{busy_port}: "
                                   "the address is in use", etcd=etcd)
    assert "Event loop is closed" not in done.stderr


@pytest.mark.parametrize("flag", ["--broker.port", "--broker.http-port"])
async def test_a_broker_port_in_use_is_one_line(apps: Path, etcd_server: EtcdServer,
                                                etcd: aetcd.Client, busy_port: int,
                                                flag: str) -> None:
    done = broker(apps, etcd_server, flag, str(busy_port))
    await assert_one_line(done, 1, f"{flag}: cannot listen on 0.0.0.0:{busy_port}: "
                                   "the address is in use", etcd=etcd)


@pytest.mark.parametrize("role", ["consumer", "broker"])
async def test_tls_files_that_are_not_pem_are_named(apps: Path, etcd_server: EtcdServer,
                                                    etcd: aetcd.Client, role: str) -> None:
    pem = str(apps / "garbage.pem")
    if role == "consumer":
        done = consumer(apps, etcd_server, "--consumer.server-cert-file", pem,
                        "--consumer.server-cert-key-file", pem)
    else:
        done = broker(apps, etcd_server, "--broker.server-cert-file", pem,
                      "--broker.server-cert-key-file", pem)
    await assert_one_line(done, 1, f"TLS certificate {pem!r} and key {pem!r} do not load as "
                                   "a PEM pair", etcd=etcd)
