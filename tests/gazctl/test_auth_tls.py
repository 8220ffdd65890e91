"""gazctl against brokers with auth keys and over TLS: keys, tokens, gazctl.ini, https."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gazctl.connection import SETTINGS
from gazette_core.broker.client.channel import ClientConfig, close_channels, journal_stub
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.local import stack as local_stack
from gazette_core.local.stack import Stack
from gazette_core.server import auth
from gazette_core.server.client_auth import CallAuth
from gazette_core.server.tls import ClientTLS
from gazette_core.testing.etcd import free_port
from tests.broker.auth_support import KEY, KEYS
from tests.gazctl.support import cli, dialing_commands, gazctl, isolated_env, ok, stop_stack
from tests.server.certs import TestCA

SPECS = (b"name: sec/listed\nreplication: 1\nfragment:\n  length: 1024\n"
         b"  compression_codec: NONE\n  stores: [file:///]\n  refresh_interval: 1s\n")
HINT = ("(set --broker.auth-keys or --broker.auth-token, or $BROKER_AUTH_KEYS or "
        "$BROKER_AUTH_TOKEN)")


@pytest.fixture(scope="module")
def secured_stack(tmp_path_factory: pytest.TempPathFactory, state_home: Path) -> Iterator[Stack]:
    """A local stack whose broker verifies tokens (`gazctl local up --auth-keys`)."""
    directory = tmp_path_factory.mktemp("secured")
    try:
        yield local_stack.up(directory, timeout=30, activate=False, auth_keys=KEYS)
    finally:
        stop_stack(directory)


@pytest.fixture(scope="module")
def address(secured_stack: Stack) -> str:
    address = secured_stack.brokers[0].endpoint
    ok("journals", "apply", "--specs", "-", "--broker.address", address,
       "--broker.auth-keys", KEYS, input=SPECS)
    return address


def _token(capability: int) -> str:
    return auth.mint(KEY, capability)


def test_list_with_auth_keys(address: str) -> None:
    result = ok("journals", "list", "--broker.address", address, "--broker.auth-keys", KEYS,
                "-o", "yaml")

    assert "name: sec/listed" in result.stdout


def test_list_with_a_pre_shared_token(address: str) -> None:
    result = ok("journals", "list", "--broker.address", address,
                "--broker.auth-token", _token(auth.LIST), "-o", "yaml")

    assert "name: sec/listed" in result.stdout


def test_keys_from_the_environment_and_from_gazctl_ini(
        address: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROKER_AUTH_KEYS", KEYS)
    assert "sec/listed" in ok("journals", "list", "--broker.address", address).stdout

    monkeypatch.delenv("BROKER_AUTH_KEYS")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gazctl.ini").write_text(f"[journals.Broker]\nAuthKeys = {KEYS}\n")
    assert "sec/listed" in ok("journals", "list", "--broker.address", address).stdout


def test_append_and_read_with_auth_keys(address: str) -> None:
    keys = ("--broker.address", address, "--broker.auth-keys", KEYS)
    ok("journals", "append", "-l", "name=sec/listed", *keys, input=b"signed\n")

    assert ok("journals", "read", "-l", "name=sec/listed", *keys).stdout == "signed\n"


def test_without_authorization_gazctl_says_how_in_one_line(address: str,
                                                           state_home: Path) -> None:
    proc = gazctl("journals", "list", "--broker.address", address,
                  env=isolated_env(state_home))

    assert proc.returncode == 1
    assert proc.stderr.decode() == (
        f"error: UNAUTHENTICATED: List: missing or empty Authorization token {HINT}\n")


def test_a_token_without_the_capability_is_refused(address: str, state_home: Path) -> None:
    proc = gazctl("journals", "list", "--broker.address", address,
                  "--broker.auth-token", _token(auth.READ), env=isolated_env(state_home))

    assert proc.returncode == 1
    assert proc.stderr.decode() == (
        f"error: UNAUTHENTICATED: List: authorization is missing required LIST capability "
        f"{HINT}\n")


def test_bad_keys_are_invalid_input(address: str) -> None:
    result = cli("journals", "list", "--broker.address", address, "--broker.auth-keys", "AA==")

    assert result.exit_code == 1
    assert str(result.exception) == (
        "--broker.auth-keys: at least one auth key besides AA== must be provided")


def test_local_env_exports_the_stacks_keys(secured_stack: Stack) -> None:
    result = ok("local", "env", "--dir", str(secured_stack.directory))

    assert f"export BROKER_AUTH_KEYS={KEYS}" in result.stdout.splitlines()


def test_every_command_that_dials_a_broker_takes_the_connection_options() -> None:
    dialing = dialing_commands()

    assert "gazctl journals list" in dialing and "gazctl journals read" in dialing
    assert [path for path, names in dialing.items() if not set(SETTINGS) <= names] == []


@pytest.fixture(scope="module")
def tls_broker(secured_stack: Stack, tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[tuple[str, TestCA]]:
    """A `gazette serve` with TLS and client certificates required, on the stack's etcd."""
    directory = tmp_path_factory.mktemp("tls")
    ca = TestCA(directory)
    server = ca.issue("server")
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gazette_core", "serve", "--broker.host", "127.0.0.1",
         "--broker.port", str(port), "--broker.id", "tls", "--broker.http-port", "-1",
         "--broker.file-root", str(directory), "--etcd.prefix", "/gazette/tls-test",
         "--etcd.address", secured_stack.etcd.endpoint,
         "--broker.server-cert-file", server.cert, "--broker.server-cert-key-file", server.key,
         "--broker.server-ca-file", ca.pem.cert, "--broker.auth-keys", KEYS],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"https://127.0.0.1:{port}"
    try:
        _wait_serving(endpoint, ca)
        yield endpoint, ca
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def _wait_serving(endpoint: str, ca: TestCA) -> None:
    client = ca.issue("probe", server=False)
    config = ClientConfig(tls=ClientTLS(client.cert, client.key, ca.pem.cert),
                          auth=CallAuth(key=KEY))

    async def serves() -> bool:
        try:
            async for _ in journal_stub(endpoint, config).List(pb.ListRequest(), timeout=1):
                return True
        except Exception:
            return False
        finally:
            await close_channels()
        return False

    deadline = time.monotonic() + 30
    while not asyncio.run(serves()):
        assert time.monotonic() < deadline, f"no broker at {endpoint}"
        time.sleep(0.2)


def test_list_over_https_with_a_client_certificate(tls_broker: tuple[str, TestCA],
                                                   state_home: Path) -> None:
    endpoint, ca = tls_broker
    client = ca.issue("gazctl", server=False)

    result = cli("journals", "list", "--broker.address", endpoint, "--broker.auth-keys", KEYS,
                 "--broker.trusted-ca-file", ca.pem.cert, "--broker.cert-file", client.cert,
                 "--broker.cert-key-file", client.key)
    # The broker answered: it has no journals.
    assert (result.exit_code, result.stdout) == (0, "Name\n"), repr(result.exception)

    proc = gazctl("journals", "list", "--broker.address", endpoint, "--broker.auth-keys", KEYS,
                  "--broker.trusted-ca-file", ca.pem.cert, env=isolated_env(state_home))
    assert proc.returncode == 1
    assert proc.stderr.decode() == (
        f"error: cannot reach broker at {endpoint}: List: UNAVAILABLE: failed to connect to all "
        f"addresses; last error: UNAVAILABLE: ipv4:{endpoint.removeprefix('https://')}: Socket "
        "closed (check --broker.trusted-ca-file, --broker.cert-file and --broker.cert-key-file, "
        "set --broker.address, or raise --timeout)\n")
