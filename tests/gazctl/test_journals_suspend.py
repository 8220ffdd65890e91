"""`gazctl journals suspend` against a real broker: outcomes, specs, and resumption."""

from __future__ import annotations

import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from tests.gazctl.support import cli, content, journals, ok
from tests.gazctl.test_journals_append_read import _append, create_journals

Level = pb.JournalSpec.Suspend
BUSY = "su/busy: not suspended: written within its flush interval (--force suspends it)"


@pytest.fixture(scope="module", autouse=True)
def su_journals(address: str) -> None:
    create_journals(address, "su", ["su/busy", "su/empty"])
    _append(address, "su/busy", b"hello\n")


def _suspend_block(address: str, journal: str) -> pb.JournalSpec.Suspend | None:
    spec = journals(address, f"name={journal}")[0].spec
    return spec.suspend if spec.HasField("suspend") else None


def test_suspend_suspends_idle_journals_and_leaves_recently_written_ones(address: str
                                                                          ) -> None:
    result = ok("journals", "suspend", "-l", "prefix=su/", "--broker.address", address)

    assert result.stdout.splitlines() == [BUSY, "su/empty: suspended"]
    assert _suspend_block(address, "su/busy") is None
    assert _suspend_block(address, "su/empty") == Level(level=Level.FULL, offset=0)
    again = ok("journals", "suspend", "-l", "name=su/empty", "--broker.address", address)
    assert again.stdout == "su/empty: already suspended\n"


def test_force_suspends_a_written_journal_which_stays_readable_and_resumes(address: str
                                                                            ) -> None:
    result = ok("journals", "suspend", "-l", "name=su/busy", "--force",
                "--broker.address", address)

    assert result.stdout == "su/busy: suspended\n"
    assert _suspend_block(address, "su/busy") == Level(level=Level.PARTIAL, offset=6)
    assert content(address, "su/busy") == b"hello\n"
    _append(address, "su/busy", b"again\n")
    assert content(address, "su/busy") == b"hello\nagain\n"
    assert _suspend_block(address, "su/busy") == Level(level=Level.NONE, offset=6)


def test_suspend_needs_a_match(address: str) -> None:
    result = cli("journals", "suspend", "-l", "name=su/none", "--broker.address", address)

    assert result.exit_code != 0
    assert str(result.exception) == "no journals match 'name=su/none'"
