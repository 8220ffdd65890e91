"""gazctl's failure modes without a broker, and help at every level of the command tree."""

from __future__ import annotations

import gc
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gazette_core.testing.etcd import free_port
from tests.gazctl.support import cli, command_paths, dialing_commands, gazctl, isolated_env

HINT = "(start one with `gazctl local up`, set --broker.address, or raise --timeout)"


@pytest.fixture(scope="module")
def closed_address() -> str:
    """An address on this host where nothing listens."""
    return f"http://127.0.0.1:{free_port()}"


@pytest.mark.parametrize(("args", "rpc"), [
    (["journals", "list"], "List"),
    (["journals", "fragments"], "List"),
    (["journals", "read", "-l", "name=a/b"], "List"),
    (["journals", "append", "-l", "name=a/b"], "List"),
    (["journals", "apply", "--specs", "-"], "List"),  # apply first reads current specs
])
def test_unreachable_broker_fails_fast_with_one_line(
        args: list[str], rpc: str, closed_address: str, state_home: Path) -> None:
    specs = (b"name: errs/one\nreplication: 1\nfragment:\n  length: 1024\n"
             b"  compression_codec: NONE\n  refresh_interval: 1s\n")

    # The timeout bounds the wait: a client that retried forever would hang here.
    proc = gazctl(*args, "--broker.address", closed_address, input=specs,
                  env=isolated_env(state_home), timeout=20)

    assert proc.returncode == 1
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: cannot reach broker at {closed_address}: {rpc}: "
                               "UNAVAILABLE: ")
    assert lines[0].endswith(HINT)


def test_address_flag_wins_over_the_environment(closed_address: str, state_home: Path) -> None:
    other = f"http://127.0.0.1:{free_port()}"
    env = {**isolated_env(state_home), "BROKER_ADDRESS": other}

    from_env = gazctl("journals", "list", env=env, timeout=20)
    from_flag = gazctl("journals", "list", "--broker.address", closed_address, env=env,
                       timeout=20)

    assert from_env.stderr.decode().startswith(f"error: cannot reach broker at {other}: ")
    assert from_flag.stderr.decode().startswith(f"error: cannot reach broker at {closed_address}: ")


def test_bad_address_scheme_is_reported(state_home: Path) -> None:
    proc = gazctl("journals", "list", "--broker.address", "ftp://host",
                  env=isolated_env(state_home))

    assert proc.returncode == 2
    assert proc.stderr.decode() == (
        "error: invalid input: --broker.address: 'ftp://host' is not an endpoint URL: "
        "scheme must be http, https or unix, not 'ftp'\n")


def test_error_lines_keep_bracketed_input_verbatim(state_home: Path) -> None:
    # rich would read "[x]" as markup and drop it from the message.
    proc = gazctl("journals", "list", "-l", "name=[x]", env=isolated_env(state_home))

    assert proc.returncode == 2
    assert proc.stderr.decode() == ('error: invalid input: --selector: expected "," or end of '
                                    'selector at position 5 of "name=[x]" (near "[x]")\n')


COMMANDS = command_paths()


@pytest.mark.parametrize("flag", ["--help", "-h"])
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "gazctl")
def test_help_exits_0_at_every_level(command: list[str], flag: str) -> None:
    # What earlier tests of this process left for the collector (asyncio warns on
    # stderr of a pending task it destroys) is collected first, so the stderr
    # captured below is the command's alone.
    gc.collect()
    result = cli(*command, flag)

    assert result.exit_code == 0, result.output
    assert "Usage:" in result.stdout
    assert result.stderr == ""


def test_help_through_the_entry_point_exits_0(state_home: Path) -> None:
    proc = gazctl("journals", "read", "--help", env=isolated_env(state_home))

    assert proc.returncode == 0
    assert b"Read journals matching the selector" in proc.stdout


@pytest.fixture
def silent_address() -> Iterator[str]:
    """An address that accepts TCP connections and never answers, like a wedged server."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


def test_timeout_bounds_the_wait_for_a_broker_that_never_answers(
        silent_address: str, state_home: Path) -> None:
    started = time.monotonic()
    proc = gazctl("journals", "list", "--broker.address", silent_address, "--timeout", "1s",
                  env=isolated_env(state_home), timeout=30)
    elapsed = time.monotonic() - started

    assert proc.returncode == 1
    assert proc.stderr.decode() == (
        f"error: cannot reach broker at {silent_address}: no connection within 1s {HINT}\n")
    # gRPC's own handshake deadline is 20 s; the flag, not it, ended the wait.
    assert elapsed < 15


def test_timeout_comes_from_the_environment(silent_address: str, state_home: Path) -> None:
    env = {**isolated_env(state_home), "GAZCTL_TIMEOUT": "500ms"}

    proc = gazctl("journals", "fragments", "--broker.address", silent_address, env=env,
                  timeout=30)

    assert proc.returncode == 1
    assert "no connection within 0.5s" in proc.stderr.decode()


@pytest.mark.parametrize("value", ["0s", "-1s", "soon"])
def test_bad_timeout_is_a_clear_error(value: str, silent_address: str) -> None:
    result = cli("journals", "list", "--broker.address", silent_address, "--timeout", value)

    assert result.exit_code != 0
    assert "--timeout" in str(result.exception)


def test_every_command_that_dials_a_broker_takes_timeout() -> None:
    dialing = dialing_commands()

    assert "gazctl journals read" in dialing and "gazctl journals prune" in dialing
    assert [path for path, names in dialing.items() if "timeout" not in names] == []
