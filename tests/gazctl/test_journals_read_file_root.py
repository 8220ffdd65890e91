"""`gazctl journals read --file-root`: persisted file:// fragments are read from that directory.

The proof that the bytes came from the directory and not through a broker:
the brokers' own fragment files are overwritten with other bytes of the same
length after a copy of them was taken. A read through the brokers then gives
the overwritten bytes, a read with --file-root pointing at the copy the
original ones. Two brokers serve the journals, so some journals' only
member is not the broker gazctl dials: such reads, which may not be proxied,
must find their way to the member.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gazette_core.local.stack import Stack
from tests.gazctl.committed_support import ACK, CONT, OUT, P, Q, json_record
from tests.gazctl.support import (
    journals,
    ok,
    one_error_line,
    run_main,
    running_stack,
    wait_primaries,
)
from tests.gazctl.test_journals_append_read import _append
from tests.gazctl.test_journals_prune import (
    APPENDS,
    PERSISTED,
    _fragments,
    child,
    files,
    populate,
)

PREFIX = "fileroot"
NAMES = ["a", "b", "c", "d"]
CONTENT = b"".join(APPENDS)  # the last append stays in the spool, unpersisted


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, state_home: Path) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("stack"), brokers=2) as s:
        yield s


EVENTS = "fileroot-msg/events"
EVENTS_SPEC = f"""\
name: {EVENTS}
revision: 0
replication: 1
labels:
  - {{name: content-type, value: application/x-ndjson}}
fragment:
  length: 1024
  compression_codec: NONE
  stores: [file:///]
  refresh_interval: 1s
"""
# ~860-byte messages (and an ACK) over 1 KiB fragments: the first four messages are
# persisted in two fragments, the last stays in the spool.
MESSAGES = [json_record(P, 1, CONT, "m" * 800), json_record(Q, 1, OUT, "m" * 800),
            json_record(P, 2, ACK), json_record(Q, 2, OUT, "m" * 800),
            json_record(Q, 3, OUT, "m" * 800)]
EVENTS_PERSISTED = [(0, len(MESSAGES[0])), (len(MESSAGES[0]), len(b"".join(MESSAGES[:4])))]


def _events(address: str) -> None:
    """A journal of messages (a transaction and messages of their own), partly persisted."""
    ok("journals", "apply", "--broker.address", address, input=EVENTS_SPEC)
    wait_primaries(address, f"name={EVENTS}")
    for record in MESSAGES:
        _append(address, EVENTS, record)
    deadline = time.monotonic() + 30
    while [(f.spec.begin, f.spec.end) for f in _fragments(address, EVENTS)
           if f.spec.mod_time] != EVENTS_PERSISTED:
        assert time.monotonic() < deadline, _fragments(address, EVENTS)
        time.sleep(0.1)


@pytest.fixture(scope="module")
def copied_root(address: str, stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Journals with persisted fragments; a copy of the fragments, then the originals spoiled."""
    populate(address, PREFIX, [child(PREFIX, name) for name in NAMES], NAMES)
    _events(address)
    root = stack.directory / "fragments"
    copy = tmp_path_factory.mktemp("copy") / "root"
    shutil.copytree(root, copy)
    for name in NAMES:
        assert files(stack, f"{PREFIX}/{name}") == PERSISTED
        for path in (root / PREFIX / name).iterdir():
            path.write_bytes(path.read_bytes().upper())  # same length, other bytes
    for path in (root / EVENTS).iterdir():  # other text, the same messages
        path.write_bytes(path.read_bytes().replace(b"m", b"n"))
    return copy


def _read(address: str, journal: str, *args: str) -> bytes:
    return ok("journals", "read", "-l", f"name={journal}", "--broker.address", address,
              *args).stdout_bytes


def test_read_with_file_root_reads_the_directory(address: str, copied_root: Path) -> None:
    through_brokers = _read(address, f"{PREFIX}/a")
    direct = _read(address, f"{PREFIX}/a", "--file-root", str(copied_root))

    assert through_brokers == CONTENT[:2400].upper() + CONTENT[2400:]
    assert direct == CONTENT


def test_every_journal_reads_the_same_with_file_root_whichever_broker_serves_it(
        address: str, stack: Stack, copied_root: Path) -> None:
    routes = [list(j.route.endpoints) for j in journals(address, f"suite={PREFIX}")]
    assert any(stack.brokers[0].endpoint not in endpoints for endpoints in routes), routes
    for name in NAMES:
        assert _read(address, f"{PREFIX}/{name}", "--file-root", str(copied_root)) == CONTENT


def test_a_file_root_that_is_no_directory_is_refused(
        address: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nowhere"

    code, out, err = run_main(capsys, "journals", "read", "-l", f"name={PREFIX}/a",
                              "--file-root", str(missing), "--broker.address", address)

    assert (code, out) == (2, "")
    assert one_error_line(err) == (
        f"error: invalid input: --file-root: {str(missing)!r} (from --file-root or "
        "$BROKER_FILE_ROOT) is not a directory (it must be the brokers' --broker.file-root)")


def test_committed_reads_take_file_root_too(address: str, copied_root: Path) -> None:
    p1, q1, _, q2, q3 = MESSAGES

    through_brokers = _read(address, EVENTS, "--committed")
    direct = _read(address, EVENTS, "--committed", "--file-root", str(copied_root))

    assert through_brokers == (q1 + p1 + q2).replace(b"m", b"n") + q3
    assert direct == q1 + p1 + q2 + q3
