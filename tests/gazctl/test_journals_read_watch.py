"""`gazctl journals read -b` re-evaluates its selector: journals come and go while it reads.

Each test starts a blocking read as a subprocess, changes which journals
match its selector (create, relabel, delete) and polls the output with a
generous deadline, then stops the read with a signal.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gazette_core.broker.client.journals import apply_journals
from gazette_core.broker.protocol import protocol_pb2 as pb
from tests.gazctl.support import GAZCTL, isolated_env, journals, ok, wait_primaries, with_broker
from tests.gazctl.test_journals_append_read import TREE, _append

DEADLINE = 60.0


def _create(address: str, name: str, topic: str) -> None:
    """Create journal `name` (under wt/) labelled topic=`topic`, once it has a primary."""
    child = (f"  - name: {name}\n    revision: 0\n"
             f"    labels:\n      - name: topic\n        value: {topic}\n")
    ok("journals", "apply", "--broker.address", address,
       input=TREE.format(children=child).replace("name: rw/", "name: wt/"))
    wait_primaries(address, f"name={name}")


def _change(address: str, change: pb.ApplyRequest.Change) -> None:
    with_broker(address, lambda stub: apply_journals(stub, pb.ApplyRequest(changes=[change])))


def _relabel(address: str, name: str, topic: str) -> None:
    """Give journal `name` the label topic=`topic` in place of its current topic."""
    (journal,) = journals(address, f"name={name}")
    spec = pb.JournalSpec()
    spec.CopyFrom(journal.spec)
    labels = [label for label in spec.labels.labels if label.name != "topic"]
    labels.append(pb.Label(name="topic", value=topic))
    del spec.labels.labels[:]
    spec.labels.labels.extend(sorted(labels, key=lambda label: (label.name, label.value)))
    _change(address, pb.ApplyRequest.Change(upsert=spec,
                                            expect_mod_revision=journal.mod_revision))


def _delete(address: str, name: str) -> None:
    (journal,) = journals(address, f"name={name}")
    _change(address, pb.ApplyRequest.Change(delete=name, expect_mod_revision=journal.mod_revision))


@contextmanager
def _reading(address: str, tmp_path: Path, state_home: Path,
             *args: str) -> Iterator[tuple[subprocess.Popen[bytes], Path, Path]]:
    """A running `gazctl journals read -b ARGS`, its stdout and stderr going to files."""
    out_path, err_path = tmp_path / "stdout", tmp_path / "stderr"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        proc = subprocess.Popen(
            [*GAZCTL, "journals", "read", "-b", *args, "--broker.address", address],
            stdout=out, stderr=err, env=isolated_env(state_home))
    try:
        yield proc, out_path, err_path
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _wait_for_lines(path: Path, expected: list[bytes], proc: subprocess.Popen[bytes]) -> None:
    """Wait until the output holds exactly `expected`'s lines, in any order across journals."""
    deadline = time.monotonic() + DEADLINE
    while sorted(path.read_bytes().splitlines()) != sorted(expected):
        assert proc.poll() is None, f"reader exited early with {proc.returncode}"
        assert time.monotonic() < deadline, f"reader wrote {path.read_bytes()!r}"
        time.sleep(0.05)


def _stop(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    proc.send_signal(sig)
    assert proc.wait(timeout=30) == 128 + sig


def test_a_journal_created_later_is_read_and_its_offset_written(
        address: str, tmp_path: Path, state_home: Path) -> None:
    _create(address, "wt/x/one", "x")
    _create(address, "wt/other", "not-x")
    offsets = tmp_path / "offsets.json"
    with _reading(address, tmp_path, state_home, "-l", "topic=x",
                  "--offsets-out", str(offsets)) as (proc, out, err):
        _append(address, "wt/x/one", b"one-1\n")
        _wait_for_lines(out, [b"one-1"], proc)

        _create(address, "wt/x/two", "x")
        _append(address, "wt/x/two", b"two-1\n")
        _append(address, "wt/other", b"other\n")
        _wait_for_lines(out, [b"one-1", b"two-1"], proc)
        _append(address, "wt/x/one", b"one-2\n")
        _wait_for_lines(out, [b"one-1", b"two-1", b"one-2"], proc)
        _stop(proc, signal.SIGTERM)
    assert json.loads(offsets.read_text()) == {"wt/x/one": 12, "wt/x/two": 6}
    assert err.read_bytes() == b""


def test_journals_leaving_the_selection_are_let_go_and_the_read_goes_on(
        address: str, tmp_path: Path, state_home: Path) -> None:
    for name in ("wt/y/keep", "wt/y/moved", "wt/y/gone"):
        _create(address, name, "y")
    offsets = tmp_path / "offsets.json"
    with _reading(address, tmp_path, state_home, "-l", "topic=y",
                  "--offsets-out", str(offsets)) as (proc, out, _):
        for name in ("keep", "moved", "gone"):
            _append(address, f"wt/y/{name}", f"{name}-1\n".encode())
        seen = [b"keep-1", b"moved-1", b"gone-1"]
        _wait_for_lines(out, seen, proc)

        _relabel(address, "wt/y/moved", "elsewhere")
        _delete(address, "wt/y/gone")
        # Snapshots come in revision order, so once a journal created after
        # these changes is read, the moved journal's reader has been let go.
        _create(address, "wt/y/late", "y")
        _append(address, "wt/y/late", b"late-1\n")
        seen.append(b"late-1")
        _wait_for_lines(out, seen, proc)
        _append(address, "wt/y/moved", b"moved-2\n")  # not read: moved is not selected
        _append(address, "wt/y/keep", b"keep-2\n")
        seen.append(b"keep-2")
        _wait_for_lines(out, seen, proc)

        # Back in the selection, it goes on from where its reader stopped.
        _relabel(address, "wt/y/moved", "y")
        seen.append(b"moved-2")
        _wait_for_lines(out, seen, proc)
        _stop(proc, signal.SIGTERM)
    assert json.loads(offsets.read_text()) == {
        "wt/y/gone": 7, "wt/y/keep": 14, "wt/y/late": 7, "wt/y/moved": 16}


def test_a_selector_matching_nothing_yet_waits_for_a_journal(
        address: str, tmp_path: Path, state_home: Path) -> None:
    with _reading(address, tmp_path, state_home, "-l", "topic=later") as (proc, out, err):
        deadline = time.monotonic() + DEADLINE
        while not err.read_bytes():  # the note says the watch has seen the empty selection
            assert proc.poll() is None, f"reader exited early with {proc.returncode}"
            assert time.monotonic() < deadline, "no note on stderr"
            time.sleep(0.05)
        _create(address, "wt/later", "later")
        _append(address, "wt/later", b"at last\n")
        _wait_for_lines(out, [b"at last"], proc)
        _stop(proc, signal.SIGINT)
    assert out.read_bytes() == b"at last\n"
    assert err.read_bytes() == (
        b"no journals match 'topic=later' yet; waiting for some to appear\n")


def test_count_ends_a_blocking_read_across_journals_that_appear(
        address: str, tmp_path: Path, state_home: Path) -> None:
    _create(address, "wt/count/a", "count")
    _append(address, "wt/count/a", b"a-1\n")
    with _reading(address, tmp_path, state_home, "-l", "topic=count",
                  "-c", "3") as (proc, out, _):
        _wait_for_lines(out, [b"a-1"], proc)
        _create(address, "wt/count/b", "count")
        _append(address, "wt/count/b", b"b-1\nb-2\nb-3\n")
        assert proc.wait(timeout=DEADLINE) == 0
    assert out.read_bytes() == b"a-1\nb-1\nb-2\n"
