"""`gazctl journals reset-head` and `store-health` against a real broker."""

from __future__ import annotations

import pytest

from tests.gazctl.support import cli, content, ok
from tests.gazctl.test_journals_append_read import _append, create_journals

JOURNALS = ["rh/a", "rh/b"]


@pytest.fixture(scope="module", autouse=True)
def rh_journals(address: str) -> None:
    create_journals(address, "rh", JOURNALS)


def test_reset_head_of_healthy_journals_keeps_their_content(address: str) -> None:
    _append(address, "rh/a", b"kept\n")
    result = ok("journals", "reset-head", "-l", "prefix=rh/", "--broker.address", address)
    assert sorted(result.stdout.splitlines()) == ["rh/a: write head at 5", "rh/b: write head at 0"]
    assert content(address, "rh/a") == b"kept\n"
    _append(address, "rh/a", b"more\n")  # still writable, after the old head
    assert content(address, "rh/a") == b"kept\nmore\n"


def test_reset_head_needs_a_match(address: str) -> None:
    result = cli("journals", "reset-head", "-l", "name=rh/none", "--broker.address", address)
    assert str(result.exception) == "--selector: no journals match 'name=rh/none'"


def test_store_health_reports_a_healthy_store(address: str) -> None:
    result = ok("journals", "store-health", "file:///", "--broker.address", address)
    assert result.stdout == "Fragment store file:/// is healthy\n"


def test_store_health_refuses_an_invalid_url(address: str) -> None:
    result = cli("journals", "store-health", "ftp://nowhere/", "--broker.address", address)
    assert result.exit_code == 1
    assert str(result.exception) == ('store: invalid scheme "ftp" of "ftp://nowhere/" '
                                     "(expected one of s3, gs, azure, azure-ad, file)")
