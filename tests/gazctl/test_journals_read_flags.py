"""`gazctl journals read` flags beyond Go's basics: offsets files, record counts, time bounds."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gazctl.timeflags import parse_time, since_to_unix
from gazette_core.errors import ValidationError
from tests.gazctl.support import GAZCTL, cli, isolated_env, ok
from tests.gazctl.test_journals_append_read import _append, create_journals

JOURNALS = ["rf/count", "rf/offsets", "rf/term", "rf/two/a", "rf/two/b"]


@pytest.fixture(scope="module", autouse=True)
def rf_journals(address: str) -> None:
    create_journals(address, "rf", JOURNALS)


def test_offsets_out_then_offsets_resume_where_the_last_read_stopped(
        address: str, tmp_path: Path) -> None:
    offsets = tmp_path / "offsets.json"
    offsets.write_text("{}")
    _append(address, "rf/offsets", b"a\nb\n")
    first = ok("journals", "read", "-l", "name=rf/offsets", "--offsets", str(offsets),
               "--offsets-out", str(offsets), "--broker.address", address)
    assert first.stdout_bytes == b"a\nb\n"
    assert json.loads(offsets.read_text()) == {"rf/offsets": 4}

    _append(address, "rf/offsets", b"c\n")
    second = ok("journals", "read", "-l", "name=rf/offsets", "--offsets", str(offsets),
                "--offsets-out", str(offsets), "--broker.address", address)
    assert second.stdout_bytes == b"c\n"
    assert json.loads(offsets.read_text()) == {"rf/offsets": 6}
    # The file read at the start is kept: a crash in between would be visible.
    assert json.loads((tmp_path / "offsets.json.previous").read_text()) == {"rf/offsets": 4}


def test_count_stops_after_that_many_records(address: str, tmp_path: Path) -> None:
    _append(address, "rf/count", b"1\n2\n3\n")
    _append(address, "rf/count", b"4\n")
    out = tmp_path / "offsets.json"
    result = ok("journals", "read", "-l", "name=rf/count", "-c", "2", "--offsets-out", str(out),
                "--broker.address", address)
    assert result.stdout_bytes == b"1\n2\n"
    assert json.loads(out.read_text()) == {"rf/count": 4}  # just after the second record


def test_count_across_journals_writes_whole_records(address: str) -> None:
    _append(address, "rf/two/a", b"a1\na2\n")
    _append(address, "rf/two/b", b"b1\nb2\n")
    result = ok("journals", "read", "-l", "prefix=rf/two/", "-c", "3",
                "--broker.address", address)
    lines = result.stdout_bytes.splitlines()
    assert len(lines) == 3 and set(lines) <= {b"a1", b"a2", b"b1", b"b2"}


def test_offsets_file_must_exist(address: str, tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    result = cli("journals", "read", "-l", "name=rf/count", "--offsets", str(missing),
                 "--broker.address", address)
    assert result.exit_code == 1
    assert str(result.exception).startswith(f"--offsets: cannot read '{missing}'")


def test_from_and_since_are_exclusive(address: str) -> None:
    result = cli("journals", "read", "-l", "name=rf/count", "--from", "0", "--since", "1h",
                 "--broker.address", address)
    assert str(result.exception) == "--since: use either --from or --since, not both"


def test_time_flags_take_unix_seconds_rfc3339_and_durations() -> None:
    assert parse_time("1700000000", "--from") == 1700000000
    stamp = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)
    assert parse_time("2026-11-21T10:00:00Z", "--from") == int(stamp.timestamp())
    assert parse_time("2026-11-21T12:00:00+02:00", "--from") == int(stamp.timestamp())
    with pytest.raises(ValidationError, match="has no time zone"):
        parse_time("2026-11-21T10:00:00", "--from")
    with pytest.raises(ValidationError, match="expected unix seconds or an RFC 3339 time"):
        parse_time("yesterday", "--to")
    assert since_to_unix("2h30m", now=10_000.0) == 1000


def test_sigterm_ends_a_blocking_read_and_writes_its_offsets(
        address: str, tmp_path: Path, state_home: Path) -> None:
    _append(address, "rf/term", b"one\ntwo\n")
    offsets, out_path = tmp_path / "offsets.json", tmp_path / "stdout"
    with out_path.open("wb") as out:
        proc = subprocess.Popen(
            [*GAZCTL, "journals", "read", "-b", "-l", "name=rf/term", "--offsets-out",
             str(offsets), "--broker.address", address],
            stdout=out, stderr=subprocess.PIPE, env=isolated_env(state_home))
    try:
        for _ in range(300):  # until the content has been written
            if out_path.read_bytes() == b"one\ntwo\n":
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stderr is not None
        proc.stderr.close()
    assert out_path.read_bytes() == b"one\ntwo\n"
    assert json.loads(offsets.read_text()) == {"rf/term": 8}
