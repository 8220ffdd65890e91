"""`gazctl attach-uuids`: prefix each input line with a fresh Gazette message UUID.

For inputs appended to `text/csv` journals, whose readers take a UUID from
each row's first column. The UUIDs come from one random producer per run,
carry the OUTSIDE_TXN flag (each row is committed on its own) and follow a
monotonic clock, so they are unique and ordered. No broker is involved.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

import typer

from gazctl.usage import UsageError
from gazette_core.errors import ValidationError
from gazette_core.message.uuid import Clock, Flags, build_uuid, new_producer_id

DEFAULT_TEMPLATE = "{{.UUID}},{{.Line}}\n"
FIELD = re.compile(r"\{\{\s*\.(\w+)\s*\}\}")


def attach_uuids(
    files: list[Path] = typer.Argument(None, help="Input files; stdin when none are given."),
    template: str = typer.Option(DEFAULT_TEMPLATE, "--template",
                                 help="Output per line; {{.UUID}} and {{.Line}} are replaced. "
                                      "A newline is added if the template has none."),
    max_length: int = typer.Option(4 * 1024 * 1024, "--max-length", min=1,
                                   help="Longest input line accepted, in bytes."),
    skip_header: bool = typer.Option(False, "--skip-header",
                                     help="Drop the first line of each input."),
) -> None:
    """Write each input line with a Gazette UUID attached, e.g. as a CSV column."""
    render = _compile(template)
    clock, producer = Clock(), new_producer_id()
    out = sys.stdout.buffer
    for number, line in _lines(files, max_length, skip_header):
        clock.update()
        u = build_uuid(producer, clock.tick(), Flags.OUTSIDE_TXN)
        try:
            text = line.decode()
        except UnicodeDecodeError:
            raise ValidationError(f"line {number}", "is not UTF-8 text") from None
        out.write(render(str(u), text).encode())
    out.flush()


def _compile(template: str) -> Callable[[str, str], str]:
    unknown = {m.group(1) for m in FIELD.finditer(template)} - {"UUID", "Line"}
    if unknown:
        raise ValidationError("--template", f"unknown field(s) {sorted(unknown)}; "
                              "only {{.UUID}} and {{.Line}} exist")
    if not template.endswith("\n"):
        template += "\n"

    def render(u: str, line: str) -> str:
        return FIELD.sub(lambda m: u if m.group(1) == "UUID" else line, template)

    return render


def _lines(files: list[Path] | None, max_length: int, skip_header: bool
           ) -> Iterator[tuple[int, bytes]]:
    sources: list[tuple[str, BinaryIO]] = []
    for path in files or []:
        try:
            sources.append((str(path), path.open("rb")))
        except OSError as exc:
            raise UsageError(str(path), f"cannot read: {exc.strerror}") from None
    if not files:
        sources.append(("stdin", sys.stdin.buffer))
    for name, source in sources:
        try:
            for number, line in enumerate(source, 1):
                if skip_header and number == 1:
                    continue
                body = line.rstrip(b"\r\n")
                if len(body) > max_length:
                    raise ValidationError("--max-length", f"{name} line {number} is "
                                          f"{len(body)} bytes, over {max_length}")
                yield number, body
        finally:
            if source is not sys.stdin.buffer:
                source.close()
