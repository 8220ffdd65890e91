"""`gazctl journals reset-head` and `store-health` against a real broker."""

from __future__ import annotations

import hashlib
import os
import time
from typing import TYPE_CHECKING

import pytest

from gazette_core.broker.client.appender import append
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.fragment_ext import content_name, sha1_to_sum
from gazette_core.errors import AppendError
from gazette_core.local.stack import Stack
from tests.gazctl.support import cli, content, ok, one_error_line, run_main, with_broker
from tests.gazctl.test_journals_append_read import _append, create_journals

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

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
    assert str(result.exception) == "no journals match 'name=rh/none'"


def test_store_health_reports_a_healthy_store(address: str) -> None:
    result = ok("journals", "store-health", "file:///", "--broker.address", address)
    assert result.stdout == "Fragment store file:/// is healthy\n"


def test_store_health_refuses_an_invalid_url(address: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_main(capsys, "journals", "store-health", "ftp://nowhere/",
                            "--broker.address", address)
    assert code == 2
    assert one_error_line(err) == ('error: invalid input: STORE: invalid scheme "ftp" of '
                                   '"ftp://nowhere/" (expected one of s3, gs, azure, azure-ad, '
                                   "file)")


def test_reset_head_recovers_a_journal_whose_index_is_ahead_of_its_spool(
        address: str, stack: Stack) -> None:
    create_journals(address, "rha", ["rha/ahead"])
    _append(address, "rha/ahead", b"abc")
    # A broker since lost persisted [3, 10), which the live spool (ending at 3) never saw.
    lost = pb.Fragment(journal="rha/ahead", begin=3, end=10, compression_codec=pb.NONE,
                       sum=sha1_to_sum(hashlib.sha1(b"defghij").digest()))
    directory = stack.directory / "fragments" / "rha" / "ahead"
    directory.mkdir(parents=True, exist_ok=True)
    (stack.directory / "staged").write_bytes(b"defghij")
    os.replace(stack.directory / "staged", directory / content_name(lost))
    _wait_refused(address, "rha/ahead", pb.INDEX_HAS_GREATER_OFFSET)

    result = ok("journals", "reset-head", "-l", "name=rha/ahead", "--broker.address", address)

    assert result.stdout == "rha/ahead: write head at 10\n"
    _append(address, "rha/ahead", b"klm")
    assert content(address, "rha/ahead") == b"abcdefghijklm"


def _wait_refused(address: str, journal: str, status: int) -> None:
    """Append until the broker refuses with `status` (its index refreshes every second)."""
    async def attempt(stub: JournalAsyncStub) -> int:
        try:
            await append(stub, journal, b"")
        except AppendError as exc:
            return exc.status
        return pb.OK

    deadline = time.monotonic() + 30
    while (got := with_broker(address, attempt)) != status:
        assert time.monotonic() < deadline, f"{journal} still answers {pb.Status.Name(got)}"
        time.sleep(0.2)
