"""`gazctl journals fragments` after content rolled into fragments and some were persisted."""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gazctl.commands.journals_fragments import _ago
from gazette_core.broker.client.journals import list_fragments
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.fragment_ext import sum_to_hex
from gazette_core.local.stack import Stack
from tests.gazctl.support import cli, ok, wait_primaries, with_broker

TREE = """\
name: frag/
replication: 1
labels:
  - name: suite
    value: frag
fragment:
  length: 1024
  compression_codec: NONE
  stores:
    - file:///
  refresh_interval: 1s
children:
  - name: frag/rolled
    revision: 0
  - name: frag/small
    revision: 0
"""
Fragments = list[pb.FragmentsResponse._Fragment]


def _fragments(address: str, journal: str) -> Fragments:
    return with_broker(address, lambda stub: list_fragments(
        stub, pb.FragmentsRequest(journal=journal)))


def _wait_persisted(address: str, journal: str, count: int) -> Fragments:
    """Fragments of `journal` once its first `count` fragments have been persisted."""
    deadline = time.monotonic() + 30
    while True:
        frags = _fragments(address, journal)
        if len(frags) > count and all(f.spec.mod_time for f in frags[:count]):
            return frags
        assert time.monotonic() < deadline, f"not persisted: {frags}"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def rolled(address: str) -> dict[str, Fragments]:
    """frag/rolled: four 800-byte appends over 1 KiB fragments; frag/small: one append."""
    ok("journals", "apply", "--broker.address", address, input=TREE)
    wait_primaries(address, "suite=frag")
    for n in range(4):
        ok("journals", "append", "-l", "name=frag/rolled", "--broker.address", address,
           input=bytes([ord("a") + n]) * 800)
    ok("journals", "append", "-l", "name=frag/small", "--broker.address", address,
       input=b"tiny\n")
    return {"frag/rolled": _wait_persisted(address, "frag/rolled", 2),
            "frag/small": _fragments(address, "frag/small")}


def test_content_rolled_into_fragments_and_persisted(rolled: dict[str, Fragments],
                                                     stack: Stack) -> None:
    frags = rolled["frag/rolled"]
    assert [(f.spec.begin, f.spec.end) for f in frags] == [(0, 800), (800, 2400), (2400, 3200)]
    assert [f.spec.backing_store for f in frags] == ["file:///", "file:///", ""]
    assert frags[2].spec.mod_time == 0
    names = sorted(p.name for p in (stack.directory / "fragments" / "frag" / "rolled").iterdir())
    assert names == [f"{f.spec.begin:016x}-{f.spec.end:016x}-{sum_to_hex(f.spec.sum)}.raw"
                     for f in frags[:2]]


def _expected_row(journal: str, f: pb.FragmentsResponse._Fragment, size: str) -> str:
    persisted = r"\d+ seconds? ago" if f.spec.mod_time else ""
    cells = [re.escape(journal), str(f.spec.begin), re.escape(size), persisted,
             sum_to_hex(f.spec.sum)[:12] + r"\.\.\.", "NONE",
             re.escape(f.spec.backing_store or "<unpersisted>")]
    return r"\s+".join(c for c in cells if c)


def test_table_has_a_row_per_fragment(address: str, rolled: dict[str, Fragments]) -> None:
    result = ok("journals", "fragments", "-l", "suite=frag", "--broker.address", address)

    lines = [line.rstrip() for line in result.stdout.splitlines()]
    assert lines[0].split() == ["Journal", "Offset", "Length", "Persisted", "SHA1",
                                "Compression", "Store"]
    big, small = rolled["frag/rolled"], rolled["frag/small"]
    expected = [_expected_row("frag/rolled", big[0], "800 B"),
                _expected_row("frag/rolled", big[1], "1.6 KiB"),
                _expected_row("frag/rolled", big[2], "800 B"),
                _expected_row("frag/small", small[0], "5 B")]
    assert len(lines) == 1 + len(expected)
    for line, pattern in zip(lines[1:], expected, strict=True):
        assert re.fullmatch(pattern, line), (line, pattern)


def test_json_is_one_fragment_per_line(address: str, rolled: dict[str, Fragments]) -> None:
    result = ok("journals", "fragments", "-l", "name=frag/rolled", "-o", "json",
                "--broker.address", address)

    lines = [json.loads(line) for line in result.stdout.splitlines()]
    frags = rolled["frag/rolled"]
    assert [(obj["spec"]["begin"], obj["spec"]["end"]) for obj in lines] == [
        (str(f.spec.begin), str(f.spec.end)) for f in frags]
    assert [obj["spec"]["mod_time"] for obj in lines] == [str(f.spec.mod_time) for f in frags]
    assert [obj["spec"]["backing_store"] for obj in lines] == ["file:///", "file:///", ""]
    first = lines[0]
    assert first["spec"]["journal"] == "frag/rolled"
    assert first["spec"]["compression_codec"] == "NONE"
    assert first["spec"]["sum"] == {"part1": str(frags[0].spec.sum.part1),
                                    "part2": str(frags[0].spec.sum.part2),
                                    "part3": frags[0].spec.sum.part3}
    assert first["signed_url"] == ""


def test_from_keeps_unpersisted_fragments_only(address: str,
                                               rolled: dict[str, Fragments]) -> None:
    later = max(f.spec.mod_time for f in rolled["frag/rolled"]) + 3600

    result = ok("journals", "fragments", "-l", "name=frag/rolled", "-o", "json",
                "--from", str(later), "--broker.address", address)

    assert [json.loads(line)["spec"]["begin"] for line in result.stdout.splitlines()] == ["2400"]
    as_rfc3339 = datetime.fromtimestamp(later, UTC).isoformat()
    again = ok("journals", "fragments", "-l", "name=frag/rolled", "-o", "json",
               "--from", as_rfc3339, "--broker.address", address)
    assert again.stdout == result.stdout


@pytest.mark.parametrize("ttl", ["60", "1m", "1h30m"])
def test_url_ttl_adds_urls_of_persisted_fragments(address: str, rolled: dict[str, Fragments],
                                                  ttl: str) -> None:
    result = ok("journals", "fragments", "-l", "name=frag/rolled", "-o", "json",
                "--url-ttl", ttl, "--broker.address", address)

    urls = [json.loads(line)["signed_url"] for line in result.stdout.splitlines()]
    frags = rolled["frag/rolled"]
    assert urls == [f"file:///frag/rolled/{f.spec.begin:016x}-{f.spec.end:016x}-"
                    f"{sum_to_hex(f.spec.sum)}.raw" for f in frags[:2]] + [""]


def test_a_bad_url_ttl_is_a_clear_error(address: str) -> None:
    result = cli("journals", "fragments", "-l", "name=frag/rolled", "--url-ttl", "soon",
                 "--broker.address", address)

    assert result.exit_code == 1
    assert str(result.exception).startswith("--url-ttl: ")


@pytest.mark.parametrize(("ago", "text"), [
    (0, "0 seconds ago"), (1, "1 second ago"), (59, "59 seconds ago"), (60, "1 minute ago"),
    (7200, "2 hours ago"), (86400 * 3 + 5, "3 days ago"),
])
def test_persisted_age_wording(ago: int, text: str) -> None:
    assert _ago(1_000_000 - ago, now=1_000_000) == text


def test_persisted_files_hold_the_fragments_content(rolled: dict[str, Fragments],
                                                  stack: Stack) -> None:
    directory: Path = stack.directory / "fragments" / "frag" / "rolled"
    contents = [p.read_bytes() for p in sorted(directory.iterdir())]
    assert contents == [b"a" * 800, b"b" * 800 + b"c" * 800]
