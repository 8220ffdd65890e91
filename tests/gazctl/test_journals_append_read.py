"""`gazctl journals append` and `read` against a real broker."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.gazctl.support import (
    GAZCTL,
    cli,
    content,
    gazctl,
    isolated_env,
    ok,
    stop,
    wait_primaries,
)

TREE = """\
name: rw/
replication: 1
labels:
  - name: suite
    value: rw
fragment:
  length: 16777216
  compression_codec: NONE
  stores:
    - file:///
  refresh_interval: 1s
children:
{children}
"""
JOURNALS = ["rw/bin", "rw/blocking", "rw/file", "rw/mix/a", "rw/mix/b", "rw/mix/c", "rw/stdin",
            "rw/tail", "rw/to-file"]


def create_journals(address: str, root: str, names: list[str]) -> None:
    """Journals `names` (sorted, all under `root`/) with TREE's settings, once assigned."""
    children = "".join(f"  - name: {name}\n    revision: 0\n" for name in names)
    ok("journals", "apply", "--broker.address", address,
       input=TREE.format(children=children).replace("name: rw/", f"name: {root}/"))
    wait_primaries(address, f"prefix={root}/")


@pytest.fixture(scope="module", autouse=True)
def rw_journals(address: str) -> None:
    create_journals(address, "rw", JOURNALS)


def _append(address: str, journal: str, data: bytes) -> str:
    return ok("journals", "append", "-l", f"name={journal}", "--broker.address", address,
              input=data).stdout


def test_append_stdin_is_one_atomic_append_reporting_offsets(address: str) -> None:
    first = _append(address, "rw/stdin", b"one\ntwo\n")
    second = _append(address, "rw/stdin", b"three\n")

    assert first == "appended 8 bytes to rw/stdin at offsets [0, 8)\n"
    assert second == "appended 6 bytes to rw/stdin at offsets [8, 14)\n"
    assert content(address, "rw/stdin") == b"one\ntwo\nthree\n"


def test_append_input_file_keeps_binary_bytes(address: str, tmp_path: Path) -> None:
    data = bytes(range(256)) * 300
    path = tmp_path / "input.bin"
    path.write_bytes(data)

    result = ok("journals", "append", "-l", "name=rw/file", "-i", str(path),
                "--broker.address", address)

    assert result.stdout == f"appended {len(data)} bytes to rw/file at offsets [0, {len(data)})\n"
    assert content(address, "rw/file") == data


def test_append_to_a_selector_matching_nothing_exits_3(address: str, state_home: Path) -> None:
    proc = gazctl("journals", "append", "-l", "name=rw/none", "--broker.address", address,
                  input=b"lost\n", env=isolated_env(state_home))

    assert proc.returncode == 3
    assert proc.stdout == b""
    assert proc.stderr.decode() == (
        "error: no journals match 'name=rw/none'\n")


def test_append_needs_a_selector(address: str, state_home: Path) -> None:
    proc = gazctl("journals", "append", "--broker.address", address, input=b"x",
                  env=isolated_env(state_home))

    assert proc.returncode == 2
    assert proc.stderr.decode() == ("error: Missing option '-l' / '--selector'. "
                                    "(see `gazctl journals append --help`)\n")


def test_read_copies_exact_bytes_and_stops_at_the_write_head(address: str) -> None:
    data = b"\x00\xffnot utf-8\r\n" * 1000 + bytes(range(256))
    _append(address, "rw/bin", data[:5000])
    _append(address, "rw/bin", data[5000:])

    result = ok("journals", "read", "-l", "name=rw/bin", "--broker.address", address)

    assert result.stdout_bytes == data


def test_read_to_an_output_file(address: str, tmp_path: Path) -> None:
    _append(address, "rw/to-file", b"alpha\n")
    _append(address, "rw/to-file", b"beta\n")
    out = tmp_path / "out.txt"

    result = ok("journals", "read", "-l", "name=rw/to-file", "--output-file", str(out),
                "--broker.address", address)

    assert out.read_bytes() == b"alpha\nbeta\n"
    assert result.stdout_bytes == b""
    assert result.stderr == f"wrote 11 bytes to {out}\n"


def test_read_tail_without_block_starts_and_stops_at_the_write_head(address: str) -> None:
    _append(address, "rw/tail", b"old content\n")

    result = ok("journals", "read", "--tail", "-l", "name=rw/tail", "--broker.address", address)

    assert result.stdout_bytes == b""


def _block(journal: str, n: int, size: int) -> bytes:
    """An append of `size` bytes naming its journal and number on every line."""
    line = f"{journal} append {n} ".encode()
    lines = size // 100
    return b"".join(line.ljust(99, b".") + b"\n" for _ in range(lines))


def test_read_of_several_journals_never_interleaves_appends(address: str) -> None:
    # Appends larger than the broker's 32 KiB read chunks, so a reader that
    # wrote chunk by chunk would splice journals into each other's appends.
    mix = ["rw/mix/a", "rw/mix/b", "rw/mix/c"]
    blocks = {(j, n): _block(j, n, 100_000) for j in mix for n in range(3)}
    for (journal, _), data in blocks.items():
        _append(address, journal, data)

    result = ok("journals", "read", "-l", "name:prefix=rw/mix/", "--broker.address", address)

    out = result.stdout_bytes
    assert len(out) == sum(len(b) for b in blocks.values())
    # Cut the output wherever the append label changes: each run is exactly one append.
    runs = [m.group(0) for m in re.finditer(rb"((rw/mix/\w append \d) [^\n]*\n)(\2 [^\n]*\n)*",
                                            out)]
    assert sorted(runs) == sorted(blocks.values())
    for journal in mix:  # and each journal's appends keep their order
        mine = [r for r in runs if r.startswith(journal.encode())]
        assert mine == [blocks[(journal, n)] for n in range(3)]


def _wait_for_output(path: Path, expected: bytes, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while path.read_bytes() != expected:
        assert proc.poll() is None, f"reader exited early with {proc.returncode}"
        assert time.monotonic() < deadline, f"reader wrote {path.read_bytes()!r}"
        time.sleep(0.05)


def test_blocking_read_follows_new_appends_until_interrupted(
        address: str, tmp_path: Path, state_home: Path) -> None:
    _append(address, "rw/blocking", b"before\n")
    out_path = tmp_path / "stdout"
    with out_path.open("wb") as out:
        proc = subprocess.Popen(
            [*GAZCTL, "journals", "read", "-b", "-l", "name=rw/blocking",
             "--broker.address", address],
            stdout=out, stderr=subprocess.PIPE, env=isolated_env(state_home))
    try:
        _wait_for_output(out_path, b"before\n", proc)
        _append(address, "rw/blocking", b"after\n")
        _wait_for_output(out_path, b"before\nafter\n", proc)
        _append(address, "rw/blocking", b"again\n")
        _wait_for_output(out_path, b"before\nafter\nagain\n", proc)
        assert stop(proc) == 130
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        assert proc.stderr is not None
        stderr = proc.stderr.read()
        proc.stderr.close()
    assert stderr == b""


def test_read_needs_a_selector_matching_something(address: str) -> None:
    result = cli("journals", "read", "-l", "name=rw/none", "--broker.address", address)

    assert result.exit_code == 1
    assert str(result.exception) == "no journals match 'name=rw/none'"
