"""Output helpers shared by gazctl commands: tables, JSON lines, error lines and progress."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Column, Table
from rich.text import Text
from typer._click import exceptions as click  # Typer ships its own copy of click.

from gazette_core.consumer.api.errors import ShardStatusError
from gazette_core.errors import GazetteError, StatusError, ValidationError
from gazette_core.server import json_mapping

stdout = Console(soft_wrap=True)
stderr = Console(stderr=True, soft_wrap=True)
# stderr with colours forced on (--log.format=color), or None: colours only on a terminal.
_coloured: Console | None = None


def err_console() -> Console:
    """The console of gazctl's stderr lines: notices, warnings and the error line."""
    return _coloured or stderr


def force_colour(on: bool) -> None:
    """Colour stderr lines even when stderr is no terminal (or stop doing so)."""
    global _coloured
    _coloured = Console(stderr=True, soft_wrap=True, force_terminal=True) if on else None


def print_error(exc: BaseException) -> None:
    """One red line on stderr saying what was wrong and, when we know, how to fix it."""
    hint = getattr(exc, "hint", "")
    if isinstance(exc, ValidationError):
        text = f"invalid input: {exc}"
    elif isinstance(exc, StatusError):
        text = f"broker refused: {exc}"
    elif isinstance(exc, ShardStatusError):
        text = f"consumer refused: {exc}"
    elif isinstance(exc, GazetteError):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc}"
    # Messages quote user input (selectors, YAML, names) that may look like markup.
    line = f"[bold red]error:[/] {escape(text)}" + (f" [dim]({escape(hint)})[/]" if hint else "")
    err_console().print(line, highlight=False, markup=True)


def print_usage_error(exc: click.UsageError) -> None:
    """A command-line mistake as one red line naming the command's --help."""
    where = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
    # Typer's value checks word their messages as pydantic does.
    text = exc.format_message().replace("Value error, ", "")
    err_console().print(f"[bold red]error:[/] {escape(text)}[dim]{escape(where)}[/]",
                        highlight=False, markup=True)


def table_of(columns: Sequence[str | Column], rows: Iterable[Sequence[str | Text]]) -> Table:
    """A plain table (header row, no box, so it greps well); str cells are not markup."""
    t = Table(*columns, box=None, header_style="bold", pad_edge=False)
    for row in rows:
        t.add_row(*(escape(cell) if isinstance(cell, str) else cell for cell in row))
    return t


def table(columns: Sequence[str | Column], rows: Iterable[Sequence[str | Text]]) -> None:
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


def go_list_json(msg: Message) -> dict[str, Any]:
    """A List response as Go's gazctl prints `list -o json`: jsonpb with proto field names
    and every field written (see gazette_core.server.json_mapping)."""
    doc: dict[str, Any] = json_mapping.to_json(msg, orig_names=True)
    return doc


def go_json_object(doc: object) -> None:
    """Print one JSON object as Go does, compact, with a newline after it: Go writes none,
    but JSON readers take either, and with one a prompt or the next object starts on a
    line of its own."""
    sys.stdout.write(json_mapping.dumps(doc).decode() + "\n")


def humanize_bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


class JournalProgress:
    """A count of journals done out of a total, drawn as a bar while its block runs."""

    def __init__(self, progress: Progress, task: TaskID) -> None:
        self._progress = progress
        self._task = task

    def start(self, total: int) -> None:
        """Set the number of journals, for work that learns it only after listing them."""
        self._progress.update(self._task, total=total)

    def advance(self, n: int = 1) -> None:
        """Count `n` more journals done. Safe from any thread (Progress takes a lock)."""
        self._progress.advance(self._task, n)


@contextmanager
def journal_progress(description: str, total: int | None = None) -> Iterator[JournalProgress]:
    """A progress bar over journals ("3/10 journals", elapsed, ETA) while the block runs.

    Only drawn when stdout is a terminal; piped or redirected output (and CliRunner)
    gets nothing extra, byte for byte. Without `total` the bar waits for `start`.
    """
    with _progress(TextColumn("{task.description}", markup=False), BarColumn(),
                   MofNCompleteColumn(), TextColumn("journals"),
                   TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn()) as progress:
        yield JournalProgress(progress, progress.add_task(description, total=total))


@contextmanager
def activity(description: str) -> Iterator[None]:
    """A spinner, `description` and the elapsed time, for a step that has no count to show.

    Drawn under the same conditions as `journal_progress`.
    """
    with _progress(SpinnerColumn(), TextColumn("{task.description}", markup=False),
                   TimeElapsedColumn()) as progress:
        progress.add_task(description, total=None)
        yield


def _progress(*columns: ProgressColumn) -> Progress:
    # The bar goes to stderr's console when stderr is a terminal as well: stdout is then
    # never written to while the bar is up, and what the command writes to stderr in the
    # meantime (notes, warnings) goes through that console's redirect, so it lands above
    # the bar instead of under a half-erased copy of it. When stderr is redirected (2>log)
    # the stdout console is the only one the user sees; the bar is transient there and is
    # erased when the block ends, before the command prints its output. Transient in both
    # cases, so the screen ends up showing what the command printed and nothing else.
    on_stderr = stderr.is_terminal
    return Progress(*columns, console=stderr if on_stderr else stdout, transient=True,
                    # Redirecting stdout would send the command's output through the
                    # bar's console, i.e. to stderr; stderr is only redirected onto itself.
                    redirect_stdout=False, redirect_stderr=on_stderr,
                    disable=not stdout.is_terminal)
