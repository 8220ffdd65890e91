"""Malformed connection flags on every command that dials: one line, exit 2, nothing sent.

An address that does not parse (an unclosed IPv6 bracket, a scheme gRPC cannot
dial) or auth keys that are not base64 are usage errors found before anything
connects, and the error names the flag of the side it belongs to: a consumer's
address is not reported as a broker's. Each command runs as its own process.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gazctl.support import command_tree, gazctl, isolated_env, journal_set

DIALING = {path: {p.name for p in cmd.params} for path, cmd in command_tree().items()
           if "broker" in {p.name for p in cmd.params}}
CONSUMING = sorted(path for path, names in DIALING.items() if "consumer" in names)


def _args(path: str, tmp_path: Path) -> list[str]:
    """The least each command needs besides its address to get as far as dialing."""
    args = path.split()[1:]
    names = DIALING[path]
    if "selector" in names:
        args += ["-l", "name=mal/formed"]
    if path.endswith(" export"):
        args += ["--to", str(tmp_path / "out")]
    if path.endswith(" store-health"):
        args += ["file:///"]
    if path.endswith(" recover"):
        args += ["--id", "mal-formed", "-d", str(tmp_path / "recovered")]
    return args


def _input(path: str) -> bytes:
    return journal_set("mal/", "formed") if path == "gazctl journals apply" else b""


@pytest.mark.parametrize("path", sorted(DIALING))
def test_an_unparsable_broker_address_is_a_usage_error_naming_it(
        path: str, tmp_path: Path, state_home: Path) -> None:
    env = {**isolated_env(state_home), "CONSUMER_ADDRESS": "http://127.0.0.1:1"}
    proc = gazctl(*_args(path, tmp_path), "--broker.address", "http://[::1", env=env,
                  input=_input(path))

    assert proc.stderr.decode() == ("error: invalid input: --broker.address: 'http://[::1' is "
                                    "not an endpoint URL: Invalid IPv6 URL\n")
    assert (proc.returncode, proc.stdout) == (2, b"")


@pytest.mark.parametrize("path", CONSUMING)
@pytest.mark.parametrize("address, reason", [
    ("http://[::1", "Invalid IPv6 URL"),
    ("ftp://consumer:9000", "scheme must be http, https or unix, not 'ftp'"),
])
def test_an_unparsable_consumer_address_is_a_usage_error_naming_the_consumer_flag(
        path: str, address: str, reason: str, tmp_path: Path, state_home: Path) -> None:
    env = {**isolated_env(state_home), "BROKER_ADDRESS": "http://127.0.0.1:1"}
    proc = gazctl(*_args(path, tmp_path), "--consumer.address", address, env=env)

    assert proc.stderr.decode() == (f"error: invalid input: --consumer.address: {address!r} "
                                    f"is not an endpoint URL: {reason}\n")
    assert (proc.returncode, proc.stdout) == (2, b"")


@pytest.mark.parametrize("side", ["broker", "consumer"])
def test_auth_keys_that_are_not_base64_are_a_usage_error(side: str, state_home: Path) -> None:
    env = {**isolated_env(state_home), "BROKER_ADDRESS": "http://127.0.0.1:1",
           "CONSUMER_ADDRESS": "http://127.0.0.1:1"}
    proc = gazctl("shards", "list", f"--{side}.auth-keys", "%%%", env=env)

    assert proc.stderr.decode() == (f"error: invalid input: --{side}.auth-keys: auth key at "
                                    "index 0 is not valid base64: Only base64 data is allowed\n")
    assert proc.returncode == 2


CLOSED = {"BROKER_ADDRESS": "http://127.0.0.1:1", "CONSUMER_ADDRESS": "http://127.0.0.1:1"}


@pytest.mark.parametrize("shard, reason", [
    ("bad id", 'invalid character " " at index 3 of "bad id" (allowed: letters, numbers and '
               "-_+/.)"),
    ("ab", 'invalid length of "ab": expected 4 <= length <= 512 bytes (got 2)'),
])
def test_recover_checks_the_shard_id_as_consumers_do_before_asking_them(
        shard: str, reason: str, tmp_path: Path, state_home: Path) -> None:
    # The consumer address is a closed port: had gazctl asked, it would say it cannot reach it.
    proc = gazctl("shards", "recover", "--id", shard, "-d", str(tmp_path / "out"),
                  env={**isolated_env(state_home), **CLOSED})

    assert proc.stderr.decode() == f"error: invalid input: --id: shard id {shard!r}: {reason}\n"
    assert (proc.returncode, proc.stdout) == (2, b"")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("group", ["journals", "shards"])
def test_label_columns_are_checked_as_label_names(group: str, state_home: Path) -> None:
    proc = gazctl(group, "list", "-L", "app", "-L", "bad label",
                  env={**isolated_env(state_home), **CLOSED})

    assert proc.stderr.decode() == (
        "error: invalid input: --label-columns: label 'bad label': invalid character \" \" at "
        "index 3 of \"bad label\" (allowed: letters, numbers and -_+/.)\n")
    assert (proc.returncode, proc.stdout) == (2, b"")


@pytest.mark.parametrize("prefix, reason", [
    ("probe", '"probe" must end in "/"'),
    ("../up/", '"../up/" must not escape the store prefix'),
])
def test_store_health_checks_the_delete_prefix_as_brokers_do_before_asking_them(
        prefix: str, reason: str, state_home: Path) -> None:
    proc = gazctl("journals", "store-health", "file:///", "--check-delete-prefix", prefix,
                  env={**isolated_env(state_home), **CLOSED})

    assert proc.stderr.decode() == f"error: invalid input: --check-delete-prefix: {reason}\n"
    assert (proc.returncode, proc.stdout) == (2, b"")


@pytest.mark.parametrize("section, flag", [("journals.Broker", "--broker.address"),
                                           ("shards.Consumer", "--consumer.address")])
def test_an_unparsable_address_in_gazctl_ini_is_a_usage_error_naming_the_file(
        section: str, flag: str, tmp_path: Path, state_home: Path) -> None:
    ini = tmp_path / "gazette" / "gazctl.ini"
    ini.parent.mkdir()
    ini.write_text(f"[{section}]\nAddress = http://[::1\n")
    env = {k: v for k, v in isolated_env(state_home).items() if k != "CONSUMER_ADDRESS"}
    group = section.split(".")[0]
    proc = gazctl(group, "list", env={**env, "XDG_CONFIG_HOME": str(tmp_path)})

    assert proc.stderr.decode() == (f"error: invalid input: {flag} (from {ini}): 'http://[::1' "
                                    "is not an endpoint URL: Invalid IPv6 URL\n")
    assert (proc.returncode, proc.stdout) == (2, b"")
