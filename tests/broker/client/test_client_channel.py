"""Endpoint URLs to grpc targets, lists of endpoints, the default address and the channel
cache."""

from __future__ import annotations

import pytest

from gazette_core.broker.client.channel import (
    close_channels,
    default_address,
    dial,
    endpoints_of,
    grpc_target,
    journal_stub,
)
from gazette_core.broker.client.failover import FailoverChannel
from gazette_core.broker.client.journals import fetch_write_head
from gazette_core.errors import GazetteError
from tests.broker.client.fake_broker import FakeBroker


@pytest.mark.parametrize(
    ("address", "target"),
    [
        ("http://broker.example:8080", "broker.example:8080"),
        ("http://broker.example", "broker.example:80"),
        ("https://broker.example:8443", "broker.example:8443"),
        ("https://broker.example", "broker.example:443"),
        ("http://[::1]:9000", "[::1]:9000"),
        ("localhost:8080", "localhost:8080"),
        ("unix:///run/gazette.sock", "unix:///run/gazette.sock"),
        ("unix://broker/run/gazette.sock", "unix:///run/gazette.sock"),
    ],
)
def test_grpc_target(address: str, target: str) -> None:
    assert grpc_target(address) == target


@pytest.mark.parametrize(
    ("address", "message"),
    [
        (
            "ftp://broker:21",
            "invalid broker address 'ftp://broker:21': scheme must be http, https or unix, "
            "not 'ftp'",
        ),
        ("https://:443", "invalid broker address 'https://:443': missing host"),
        ("http://:8080", "invalid broker address 'http://:8080': missing host"),
        ("unix://", "invalid broker address 'unix://': expected unix:///abs/path"),
        ("", "invalid broker address '': expected host:port or a URL"),
        ("http://b1:80x", "invalid broker address 'http://b1:80x': Port could not be cast to "
         "integer value as '80x'"),
        ("http://[::1", "invalid broker address 'http://[::1': Invalid IPv6 URL"),
        ("https://[::1]:70000", "invalid broker address 'https://[::1]:70000': Port out of "
         "range 0-65535"),
    ],
)
def test_grpc_target_rejects(address: str, message: str) -> None:
    with pytest.raises(GazetteError) as caught:
        grpc_target(address)
    assert str(caught.value) == message


def test_a_grpc_target_is_one_endpoint() -> None:
    with pytest.raises(GazetteError) as caught:
        grpc_target("http://b1:8080,http://b2:8080")
    assert str(caught.value) == ("invalid broker address 'http://b1:8080,http://b2:8080': "
                                 "one endpoint is needed here, not a list")


def test_an_address_may_list_endpoints() -> None:
    address = "http://b1:8080, b2:8080,unix:///run/b3.sock,"
    assert endpoints_of(address) == ["http://b1:8080", "b2:8080", "unix:///run/b3.sock"]
    assert endpoints_of("http://b1:8080") == ["http://b1:8080"]
    assert journal_stub(address) is not None  # used to be refused: one endpoint only


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("http://b1:8080,ftp://b2:21", "invalid broker address 'ftp://b2:21': scheme must be "
         "http, https or unix, not 'ftp'"),
        ("http://b1:8080,http://:8080", "invalid broker address 'http://:8080': missing host"),
        ("b1:8080,/b2.sock", "invalid broker address '/b2.sock': expected host:port or a URL"),
        (" , ", "invalid broker address ' , ': expected host:port or a URL"),
    ],
)
def test_a_list_with_a_malformed_endpoint_is_refused_naming_it(address: str, message: str
                                                                ) -> None:
    with pytest.raises(GazetteError) as caught:
        endpoints_of(address)
    assert str(caught.value) == message
    with pytest.raises(GazetteError) as caught:
        journal_stub(address)
    assert str(caught.value) == message


def test_default_address(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BROKER_ADDRESS", raising=False)
    assert default_address() == "http://localhost:8080"
    monkeypatch.setenv("BROKER_ADDRESS", "unix:///tmp/b.sock")
    assert default_address() == "unix:///tmp/b.sock"
    # All of `gazctl local env`'s list, not just its first broker.
    monkeypatch.setenv("BROKER_ADDRESS", "http://127.0.0.1:1, http://127.0.0.1:2")
    assert default_address() == "http://127.0.0.1:1,http://127.0.0.1:2"


async def test_dial_shares_a_channel_per_address(broker: FakeBroker) -> None:
    broker.add_journal("a/journal", b"12345")
    url = f"http://{broker.address}"
    assert dial(url) is dial(broker.address)
    assert dial(url) is not dial("http://127.0.0.1:1")
    assert await fetch_write_head(journal_stub(url), "a/journal") == 5
    closed = dial(url)
    await closed.close()
    assert dial(url) is not closed  # A closed channel is replaced.
    await close_channels()
    assert dial(url) is not None
    await close_channels()


async def test_dial_shares_a_failover_channel_per_list(broker: FakeBroker) -> None:
    listed = f"http://127.0.0.1:1,http://{broker.address}"
    channel = dial(listed)
    assert isinstance(channel, FailoverChannel)
    assert dial(listed) is channel
    assert dial(f"http://{broker.address},") is dial(f"http://{broker.address}")
    await close_channels()
    assert dial(listed) is not channel
    await close_channels()
