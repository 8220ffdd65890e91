"""Progress bars of `journals fragments`, `reset-head` and `prune`: drawn only in a terminal.

gazctl runs as a real process with its stdout on a pseudo-terminal (and its
stderr on the same terminal, or on a pipe), and the bar must show while the
real output still arrives intact, after the bar is erased. Piped, the same
commands print exactly what they printed before there were bars.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from gazctl.render import message_dict
from gazette_core.local.stack import Stack
from tests.gazctl.support import gazctl
from tests.gazctl.terminal_support import Terminal, env_for, in_terminal
from tests.gazctl.test_journals_append_read import _append, create_journals
from tests.gazctl.test_journals_prune import _fragments, child, files, populate

JOURNALS = ["prog/a", "prog/b", "prog/c"]
DATA = {"prog/a": b"one\n", "prog/b": b"two two\n", "prog/c": b"three three three\n"}
# Words only the bars print: none may reach piped output.
BAR_WORDS = ("journals ", "Listing fragments", "Resetting write heads", "Deleting", "ETA")


def on_terminal(out: str) -> bytes:
    """`out` as a terminal passes it on: the tty turns each newline into CR LF."""
    return out.encode().replace(b"\n", b"\r\n")


def assert_output_after_erased_bar(term: Terminal, out: str) -> None:
    """The command's output closes the stream, right after the bar's line was erased."""
    tail = on_terminal(out)
    assert term.raw.endswith(tail), term.raw[-2000:]
    # Transient: rich clears the bar's line (CSI 2K) before the output is printed.
    assert term.raw[:len(term.raw) - len(tail)].endswith(b"\x1b[2K"), term.raw[-2000:]


def assert_no_bar(*outputs: bytes) -> None:
    for output in outputs:
        assert b"\x1b" not in output
        for word in BAR_WORDS:
            assert word.encode() not in output, (word, output)


@pytest.fixture(scope="module", autouse=True)
def prog_journals(address: str) -> None:
    create_journals(address, "prog", JOURNALS)
    for name, data in DATA.items():
        _append(address, name, data)


def fragments_json(address: str) -> str:
    """What `fragments -o json` prints, built from the broker's own listing."""
    return "".join(json.dumps(message_dict(f), separators=(",", ":")) + "\n"
                   for name in JOURNALS for f in _fragments(address, name))


def assert_bar_only_in_a_terminal(args: tuple[str, ...], expected: str, description: str,
                                  state_home: Path, stderr_too: bool) -> None:
    """Piped, the output is exactly `expected`; in a terminal, a bar and then that output."""
    piped = gazctl(*args, env=env_for(state_home))
    term = in_terminal(*args, env=env_for(state_home), stderr_too=stderr_too)

    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.decode() == expected
    assert piped.stderr == b""
    assert_no_bar(piped.stdout)
    assert term.returncode == 0, term
    assert description in term.text
    assert "3/3 journals" in term.text
    assert_output_after_erased_bar(term, expected)
    if not stderr_too:
        assert term.stderr == b""



@pytest.mark.parametrize("stderr_too", [True, False], ids=["stderr-tty", "stderr-piped"])
def test_fragments_draws_a_bar_in_a_terminal(address: str, state_home: Path,
                                             stderr_too: bool) -> None:
    args = ("journals", "fragments", "-l", "prefix=prog/", "-o", "json",
            "--broker.address", address)
    expected = fragments_json(address)
    assert expected.count("\n") == len(JOURNALS)

    assert_bar_only_in_a_terminal(args, expected, "Listing fragments", state_home, stderr_too)


@pytest.mark.parametrize("stderr_too", [True, False], ids=["stderr-tty", "stderr-piped"])
def test_reset_head_draws_a_bar_in_a_terminal(address: str, state_home: Path,
                                              stderr_too: bool) -> None:
    args = ("journals", "reset-head", "-l", "prefix=prog/", "--broker.address", address)
    # Healthy journals: each head stays at the end of what was appended.
    expected = "".join(f"{name}: write head at {len(DATA[name])}\n" for name in JOURNALS)

    assert_bar_only_in_a_terminal(args, expected, "Resetting write heads", state_home, stderr_too)


def test_prune_draws_bars_for_listing_and_deleting(address: str, stack: Stack,
                                                   state_home: Path) -> None:
    p = "prog-prune"
    # A one-second retention, so fragments expire in real time: the command runs as its
    # own process, out of reach of the clock the other prune tests move forward.
    populate(address, p, [child(p, "a", "1s"), child(p, "b", "1s"),
                          child(p, "paused", "1s", suspended=True)], ["a", "b"])
    newest = max(f.spec.mod_time for name in ("a", "b")
                 for f in _fragments(address, f"{p}/{name}"))
    while time.time() < newest + 2:
        time.sleep(0.1)
    args = ("journals", "prune", "-l", f"suite={p}", "--format", "json",
            "--broker.address", address, "--file-root", str(stack.directory / "fragments"))

    def summary(dry_run: bool) -> str:
        """The JSON line prune prints, key order included."""
        return json.dumps({
            "journals": 2, "journals_skipped": 1, "fragments": 6, "fragments_unpersisted": 2,
            "fragments_pruned": 4, "already_gone": 0, "fragments_kept": 2,
            "permission_denied": 0, "failed": 0, "bytes_total": 6400, "bytes_pruned": 4800,
            "bytes_already_gone": 0, "bytes_kept": 1600, "dry_run": dry_run,
            "skipped_journals": [f"{p}/paused"], "errors": []}, separators=(",", ":")) + "\n"

    note = f"note: skipped suspended journal {p}/paused\n"

    # Piped (a dry run: Spark is not started, so stderr holds only gazctl's own lines).
    piped = gazctl(*args, "--dry-run", env=env_for(state_home))

    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.decode() == summary(dry_run=True)
    assert piped.stderr.decode() == note
    assert_no_bar(piped.stdout, piped.stderr)

    term = in_terminal(*args, env=env_for(state_home), stderr_too=False)

    assert term.returncode == 0, (term.text[-3000:], term.stderr)
    assert "Listing fragments" in term.text
    assert "2/2 journals" in term.text
    assert "Deleting 4 expired fragments on local[*]" in term.text
    assert_output_after_erased_bar(term, summary(dry_run=False))
    assert term.stderr is not None
    # Spark's JVM writes to its log file: neither its warnings nor its log lines show.
    assert term.stderr.decode() == note
    assert "WARN" not in term.text
    assert_no_bar(term.stderr)
    for name in ("a", "b"):
        assert files(stack, f"{p}/{name}") == []
