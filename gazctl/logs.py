"""gazctl's stderr notices: its own `warning:` and `note:` lines and the libraries' log records.

All go through Python logging, configured by `--log.level` and `--log.format`
as in Go's gazctl (`$LOG_LEVEL`, `$LOG_FORMAT`, `[journals.Logging]` in
gazctl.ini): the level is the least severe line shown (trace, debug, info,
warn (the default), error or fatal), and the format is `text` (one line
`warning: ...`, coloured on a terminal), `color` (the same, always coloured)
or `json` (one JSON object per line, as logrus writes them).

`error:` is kept for the one line saying why gazctl failed (`render.print_error`),
so a library's ERROR record, a problem the command goes on despite, prints as
a `warning:` line (its JSON line keeps level "error").
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.markup import escape

from gazctl import render

TRACE = 5  # below DEBUG: Go's trace level
LEVELS = {"trace": TRACE, "debug": logging.DEBUG, "info": logging.INFO,
          "warn": logging.WARNING, "error": logging.ERROR, "fatal": logging.CRITICAL}
FORMATS = ("json", "text", "color")
DEFAULT_LEVEL, DEFAULT_FORMAT = "warn", "text"
_STYLES = {"debug": "dim", "info": "cyan", "warning": "yellow", "note": "cyan"}
log = logging.getLogger("gazctl")


def warn(text: str) -> None:
    """A `warning: ...` line: something went wrong, and the command goes on."""
    log.warning(text)


def note(text: str) -> None:
    """A `note: ...` line: something the user may not expect, at warning level."""
    log.warning(text, extra={"prefix": "note"})


def _name(level: int) -> str:
    """The record level as Go's logrus names it."""
    if level <= TRACE:
        return "trace"
    if level >= logging.CRITICAL:
        return "fatal"
    return logging.getLevelName(level).lower()


class _Handler(logging.Handler):
    """Writes each record to stderr as one `prefix: message` line, or one JSON object."""

    def __init__(self, fmt: str) -> None:
        super().__init__()
        self.fmt = fmt

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
            if self.fmt == "json":
                line = {"level": _name(record.levelno), "msg": message,
                        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z",
                                              time.localtime(record.created)),
                        "logger": record.name}
                render.err_console().out(json.dumps(line), highlight=False)
                return
            prefix = getattr(record, "prefix", None) or (
                "warning" if record.levelno >= logging.WARNING else _name(record.levelno))
            render.err_console().print(f"[{_STYLES.get(prefix, 'dim')}]{prefix}:[/] "
                                       f"{escape(message)}", highlight=False, emoji=False)
        except Exception:  # a broken stderr must not turn a notice into a failure
            self.handleError(record)


def configure(level: str = DEFAULT_LEVEL, fmt: str = DEFAULT_FORMAT) -> None:
    """Show records of `level` and above on stderr, written in `fmt`."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _Handler)]:
        root.removeHandler(handler)
    root.addHandler(_Handler(fmt))
    root.setLevel(LEVELS[level])
    render.force_colour(fmt == "color")


@contextmanager
def configured(level: str = DEFAULT_LEVEL, fmt: str = DEFAULT_FORMAT) -> Iterator[None]:
    """`configure` for one command; the logging set up before it is restored after."""
    root = logging.getLogger()
    handlers, old_level = list(root.handlers), root.level
    configure(level, fmt)
    try:
        yield
    finally:
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
        root.setLevel(old_level)
        # The colour choice stays: the error line, printed after the command, follows it.
