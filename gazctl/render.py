"""Output helpers shared by gazctl commands: tables, JSON lines and error lines."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from gazette_core.errors import GazetteError, StatusError, ValidationError

stdout = Console(soft_wrap=True)
stderr = Console(stderr=True, soft_wrap=True)


def print_error(exc: BaseException) -> None:
    """One red line on stderr saying what was wrong and, when we know, how to fix it."""
    hint = getattr(exc, "hint", "")
    if isinstance(exc, ValidationError):
        text = f"invalid input: {exc}"
    elif isinstance(exc, StatusError):
        text = f"broker refused: {exc}"
    elif isinstance(exc, GazetteError):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc}"
    # Messages quote user input (selectors, YAML, names) that may look like markup.
    line = f"[bold red]error:[/] {escape(text)}" + (f" [dim]({escape(hint)})[/]" if hint else "")
    stderr.print(line, highlight=False, markup=True)


def table_of(columns: Sequence[str], rows: Iterable[Sequence[str]]) -> Table:
    """A plain table (header row, no box, so it greps well)."""
    t = Table(*columns, box=None, header_style="bold", pad_edge=False)
    for row in rows:
        t.add_row(*(escape(cell) for cell in row))
    return t


def table(columns: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    """Print a plain table to stdout."""
    t = table_of(columns, rows)
    if stdout.is_terminal:
        stdout.print(t)
        return
    # Piped output is for scripts: never squeeze cells to the 80 columns rich assumes
    # for a non-terminal, which would cut journal names short with an ellipsis.
    natural = Measurement.get(stdout, stdout.options.update_width(1 << 20), t).maximum
    Console(file=stdout.file, soft_wrap=True, width=max(natural, 1)).print(t)


def message_dict(msg: Message) -> dict[str, Any]:
    """A message as JSON-ready dict: proto field names, enums by name, defaults included."""
    return json_format.MessageToDict(msg, preserving_proto_field_name=True,
                                     always_print_fields_with_no_presence=True)


def json_line(obj: object) -> None:
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")


def humanize_bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"
