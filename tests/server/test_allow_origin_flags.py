"""`--broker.allow-origin`, `--consumer.allow-origin`: repeatable, or listed in the environment."""

from __future__ import annotations

import pytest

from gazette_core.broker.config import parse_args as broker_args
from gazette_core.consumer.config import parse_args as consumer_args


def test_no_origin_is_allowed_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BROKER_ALLOW_ORIGIN", raising=False)
    monkeypatch.delenv("CONSUMER_ALLOW_ORIGIN", raising=False)
    assert broker_args([]).allow_origin == []
    assert consumer_args([]).allow_origin == []


def test_the_flag_repeats(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BROKER_ALLOW_ORIGIN", raising=False)
    config = broker_args(["--broker.allow-origin", "https://a.example",
                          "--broker.allow-origin", "http://b.example:8080"])
    assert config.allow_origin == ["https://a.example", "http://b.example:8080"]


def test_the_environment_lists_origins_by_commas_or_spaces(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROKER_ALLOW_ORIGIN", " https://a.example,https://b.example  \n"
                                              "https://c.example, ")
    monkeypatch.setenv("CONSUMER_ALLOW_ORIGIN", "https://d.example")
    assert broker_args([]).allow_origin == ["https://a.example", "https://b.example",
                                            "https://c.example"]
    assert consumer_args([]).allow_origin == ["https://d.example"]


def test_flags_replace_the_environments_origins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONSUMER_ALLOW_ORIGIN", "https://env.example")
    config = consumer_args(["--consumer.allow-origin", "https://flag.example"])
    assert config.allow_origin == ["https://flag.example"]


def test_help_names_the_flag_and_its_variable(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        broker_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps the help
    assert "--broker.allow-origin ALLOW_ORIGIN Origin whose browser requests" in text
    assert "[$BROKER_ALLOW_ORIGIN] (default [])" in text
