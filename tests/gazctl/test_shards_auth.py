"""gazctl shards against consumers with auth keys: the consumer's own connection settings."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gazette_core.local import stack as local_stack
from tests.broker.auth_support import KEYS
from tests.gazctl.shards_support import APP
from tests.gazctl.support import (
    exported,
    gazctl,
    isolated_env,
    one_error_line,
    run_main,
    stop_stack,
)

HINT = ("(set --consumer.auth-keys or --consumer.auth-token, or $CONSUMER_AUTH_KEYS or "
        "$CONSUMER_AUTH_TOKEN)")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, state_home: Path
          ) -> Iterator[local_stack.Stack]:
    directory = tmp_path_factory.mktemp("auth")
    try:
        yield local_stack.up(directory, consumers=1, app=APP, auth_keys=KEYS, timeout=60,
                             activate=False)
    finally:
        stop_stack(directory)


def test_consumer_keys_authorize_consumer_calls_and_broker_keys_do_not(
        stack: local_stack.Stack, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONSUMER_ADDRESS", stack.consumers[0].endpoint)
    for extra in ([], ["--broker.auth-keys", KEYS]):
        code, _, err = run_main(capsys, "shards", "list", *extra)
        line = one_error_line(err)
        assert code == 1 and line.startswith("error: UNAUTHENTICATED: "), line
        assert line.endswith(HINT), line
    # Authorized, the consumer answers: it has no shards.
    code, out, err = run_main(capsys, "shards", "list", "--consumer.auth-keys", KEYS)
    assert (code, out.split(), err) == (0, ["ID", "Status"], "")
    monkeypatch.setenv("CONSUMER_AUTH_KEYS", KEYS)
    code, _, err = run_main(capsys, "shards", "unassign", "-l", "id=none-here")
    assert (code, one_error_line(err)) == (3, "error: no shards match 'id=none-here'")


def test_local_env_exports_the_consumers_keys_so_shards_commands_are_authorized(
        stack: local_stack.Stack, state_home: Path) -> None:
    printed = gazctl("local", "env", "--dir", str(stack.directory),
                     env=isolated_env(state_home))
    assert printed.returncode == 0, printed.stderr
    env = {**isolated_env(state_home), **exported(printed.stdout.decode())}

    proc = gazctl("shards", "list", env=env)

    # Authorized, the consumer answers: it has no shards.
    assert (proc.returncode, proc.stdout.split(), proc.stderr) == (0, [b"ID", b"Status"], b"")
    assert env["CONSUMER_AUTH_KEYS"] == KEYS
