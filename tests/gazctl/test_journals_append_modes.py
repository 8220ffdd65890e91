"""`gazctl journals append` framings (none, lines, fixed) and mappings against a real broker."""

from __future__ import annotations

import base64
import struct
from collections import Counter

import pytest

from gazctl.commands.append_records import MAGIC, fnv1a32
from tests.gazctl.support import cli, content, ok
from tests.gazctl.test_journals_append_read import create_journals

PARTS = ["am/p0", "am/p1", "am/p2"]
GROUPS = ["random", "modulo", "rendezvous", "direct", "fixed", "b64"]


@pytest.fixture(scope="module", autouse=True)
def partitions(address: str) -> None:
    create_journals(address, "am", sorted(f"am/{g}/{p[-2:]}" for g in GROUPS for p in PARTS))


def journals_of(group: str) -> list[str]:
    return [f"am/{group}/{p[-2:]}" for p in PARTS]


def append(address: str, group: str, data: bytes, *flags: str) -> str:
    return ok("journals", "append", "-l", f"prefix=am/{group}/", *flags,
              "--broker.address", address, input=data).stdout


def test_lines_random_appends_every_line_whole(address: str) -> None:
    lines = [f"line {n}\n".encode() for n in range(30)]
    out = append(address, "random", b"".join(lines), "-f", "lines")
    assert out.startswith(f"appended 30 record(s), {sum(map(len, lines))} bytes, to ")
    got = [line for j in journals_of("random") for line in content(address, j).splitlines(True)]
    assert Counter(got) == Counter(lines)


@pytest.mark.parametrize("mapping", ["modulo", "rendezvous"])
def test_keyed_mappings_send_each_key_to_its_partition_in_order(address: str,
                                                                mapping: str) -> None:
    keys = [f"user-{n % 7}".encode() for n in range(21)]
    data = b"".join(k + b"\n" + f"event {i} of {k.decode()}\n".encode()
                    for i, k in enumerate(keys))
    append(address, mapping, data, "-f", "lines", "-m", mapping)
    parts = journals_of(mapping)

    def expected(key: bytes) -> str:
        if mapping == "modulo":
            return parts[fnv1a32(key) % 3]
        return max(parts, key=lambda p: fnv1a32(key) ^ fnv1a32(p.encode()))

    want: dict[str, bytes] = dict.fromkeys(parts, b"")
    for i, k in enumerate(keys):
        want[expected(k)] += f"event {i} of {k.decode()}\n".encode()
    assert {p: content(address, p) for p in parts} == want


def test_direct_mapping_reaches_every_journal_of_the_selection(address: str) -> None:
    parts = journals_of("direct")
    data = b"".join(f"{p}\nfor {p}\n".encode() for p in reversed(parts))
    append(address, "direct", data, "-f", "lines", "-m", "direct")
    assert [content(address, p) for p in parts] == [f"for {p}\n".encode() for p in parts]
    stray = cli("journals", "append", "-l", "prefix=am/direct/", "-f", "lines", "-m", "direct",
                "--broker.address", address, input=b"am/elsewhere\nlost\n")
    assert str(stray.exception) == "--mapping: journal 'am/elsewhere' is not in the selection"


def test_fixed_framing_keeps_frames_whole(address: str) -> None:
    def frame(payload: bytes) -> bytes:
        return MAGIC + struct.pack("<I", len(payload)) + payload

    parts = journals_of("fixed")
    data = b"".join(frame(p.encode()) + frame(f"payload\nfor {p}".encode()) for p in parts)
    append(address, "fixed", data, "-f", "fixed", "-m", "direct")
    assert [content(address, p) for p in parts] == [frame(f"payload\nfor {p}".encode())
                                                    for p in parts]
    bad = cli("journals", "append", "-l", "prefix=am/fixed/", "-f", "fixed",
              "--broker.address", address, input=b"\x00\x01\x02\x03\x04\x00\x00\x00abcd")
    assert str(bad.exception) == "--input: bad fixed-frame magic 00010203 (want 66339336)"


def test_base64_keys_are_decoded(address: str) -> None:
    parts = journals_of("b64")
    data = b"".join(base64.b64encode(p.encode()) + f"\nto {p}\n".encode() for p in parts)
    append(address, "b64", data, "-f", "lines", "-m", "direct", "--base64")
    assert [content(address, p) for p in parts] == [f"to {p}\n".encode() for p in parts]


@pytest.mark.parametrize(("flags", "message"), [
    (["-m", "modulo"], "--mapping: framing none appends the whole input to one journal: "
                       "it needs --mapping random"),
    (["-f", "lines", "--base64"], "--base64: needs --framing lines and a keyed mapping"),
    (["-f", "fixed", "-m", "direct", "--base64"],
     "--base64: needs --framing lines and a keyed mapping"),
])
def test_inconsistent_options_are_refused(address: str, flags: list[str], message: str) -> None:
    result = cli("journals", "append", "-l", "prefix=am/random/", *flags,
                 "--broker.address", address, input=b"x\n")
    assert result.exit_code == 1 and str(result.exception) == message
