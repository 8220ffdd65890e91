"""`gazette consumer` flags: defaults, environment fallbacks, validation and --app loading."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gazette_core.consumer.config import ConsumerConfig, parse_args
from gazette_core.consumer.main import AppLoadError, load_app


def test_flags_override_environment_which_overrides_defaults(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONSUMER_LIMIT", "7")
    monkeypatch.setenv("CONSUMER_MAX_HOT_STANDBYS", "2")
    monkeypatch.setenv("BROKER_ADDRESS", "http://b1:8080,http://b2:8080")
    config = parse_args(["--app", "pkg.mod:App", "--consumer.limit", "9",
                         "--consumer.zone", "z1", "--consumer.id", "c-1"])
    assert config == ConsumerConfig(app="pkg.mod:App", limit=9, zone="z1", id="c-1",
                                    max_hot_standbys=2,
                                    broker_address="http://b1:8080,http://b2:8080")


def test_etcd_prefix_defaults_to_the_apps_consumer_group() -> None:
    assert parse_args(["--app", "examples.stream_sum:Summer"]).root == \
        "/gazette/consumers/Summer"
    assert parse_args(["--app", "m:A", "--etcd.prefix", "/my/group/"]).root == "/my/group"


def test_a_non_positive_lease_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        parse_args(["--etcd.lease", "0"])
    assert exit_.value.code == 2
    assert "--etcd.lease must be positive (got 0)" in capsys.readouterr().err


def test_a_bad_environment_value_is_named(monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CONSUMER_PORT", "eighty")
    with pytest.raises(SystemExit):
        parse_args([])
    assert "$CONSUMER_PORT must be a port, not 'eighty'" in capsys.readouterr().err


@pytest.mark.parametrize(("spec", "message"), [
    ("nocolon", "--app 'nocolon': expected package.module:Attr"),
    ("no_such_module_x:App", "--app 'no_such_module_x:App': cannot import 'no_such_module_x': "
                             "No module named 'no_such_module_x'"),
    ("json:Nope", "--app 'json:Nope': module 'json' has no 'Nope'"),
    ("json:JSONDecoder", "--app 'json:JSONDecoder' is not an Application: it lacks new_store, "
                         "new_message, consume_message, finalize_txn"),
])
def test_app_load_errors_say_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(AppLoadError) as err:
        load_app(spec)
    assert str(err.value) == message


def test_gazette_consumer_without_an_app_exits_2_with_one_line() -> None:
    done = subprocess.run([sys.executable, "-m", "gazette_core", "consumer"],
                          capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": "."})
    assert done.returncode == 2
    assert done.stderr == ("gazette consumer: --app (or $CONSUMER_APP) is required: "
                           "package.module:Attr\n")


def test_an_id_others_would_ignore_is_refused_at_once() -> None:
    from gazette_core.consumer.service import ConsumerService
    from gazette_core.errors import GazetteError
    with pytest.raises(GazetteError) as err:
        ConsumerService(ConsumerConfig(app="m:A", id="c1"), app=object())  # type: ignore[arg-type]
    assert str(err.value) == ("--consumer.zone/--consumer.id: process_spec.id.suffix: invalid "
                              'length of "c1": expected 4 <= length <= 128 bytes (got 2)')
