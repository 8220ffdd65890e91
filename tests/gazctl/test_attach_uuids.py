"""`gazctl attach-uuids`: Gazette UUIDs prefixed to lines, no broker needed."""

from __future__ import annotations

import uuid
from pathlib import Path

from gazette_core.message.uuid import get_clock, get_flags, get_producer_id
from tests.gazctl.support import cli, ok


def parse(output: str) -> list[tuple[uuid.UUID, str]]:
    rows = [line.split(",", 1) for line in output.splitlines()]
    return [(uuid.UUID(u), rest) for u, rest in rows]


def test_each_line_gets_a_unique_ordered_uuid_of_one_producer() -> None:
    result = ok("attach-uuids", input="a,1\nb,2\nc,3\n")
    rows = parse(result.stdout)
    assert [line for _, line in rows] == ["a,1", "b,2", "c,3"]
    uuids = [u for u, _ in rows]
    assert all(u.version == 1 and get_flags(u) == 0 for u in uuids)  # OUTSIDE_TXN
    assert len({get_producer_id(u) for u in uuids}) == 1
    clocks = [get_clock(u) for u in uuids]
    assert clocks == sorted(set(clocks))


def test_files_template_and_skip_header(tmp_path: Path) -> None:
    first, second = tmp_path / "one.csv", tmp_path / "two.csv"
    first.write_text("header\nx\n")
    second.write_text("header\ny\nz\n")
    result = ok("attach-uuids", "--skip-header", "--template", "{{.Line}};{{ .UUID }}",
                str(first), str(second))
    lines = result.stdout.splitlines()
    assert [line.split(";")[0] for line in lines] == ["x", "y", "z"]
    assert all(uuid.UUID(line.split(";")[1]).version == 1 for line in lines)


def test_overlong_lines_and_unknown_fields_are_errors() -> None:
    long = cli("attach-uuids", "--max-length", "3", input="abc\nabcd\n")
    assert long.exit_code == 1
    assert str(long.exception) == "--max-length: stdin line 2 is 4 bytes, over 3"
    unknown = cli("attach-uuids", "--template", "{{.Offset}}", input="a\n")
    assert str(unknown.exception) == ("--template: unknown field(s) ['Offset']; "
                                      "only {{.UUID}} and {{.Line}} exist")
