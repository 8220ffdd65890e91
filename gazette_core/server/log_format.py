"""Log output of server processes: `--log.format` json, text or color, in logrus's shapes.

Every entry has a level (debug, info, warning, error, fatal), a message, a
time (RFC 3339) and the fields its call passed as `extra=`:
`log.info("rolled", extra={"journal": name})`.

* json: one JSON object a line, `{"level": ..., "msg": ..., "time": ..., "journal": ...}`.
* text: `time="..." level=info msg="..." journal=...`, values quoted when they need it.
* color: for terminals, the level coloured, then the message and the fields.

`say` writes one entry whatever the level threshold: a process's own
start-up and exit lines, which an operator must always see.
"""

from __future__ import annotations

import datetime
import json
import logging
import re
import sys
import time
from typing import Any

# Go's level names, by Python level.
LEVEL_NAMES = {logging.DEBUG: "debug", logging.INFO: "info", logging.WARNING: "warning",
               logging.ERROR: "error", logging.CRITICAL: "fatal"}
_COLORS = {"debug": 37, "info": 36, "warning": 33, "error": 31, "fatal": 31}
# Attributes every LogRecord has: anything else on a record came from `extra=`.
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
    "message", "asctime", "taskName"}
# Text values made only of these characters go unquoted, as logrus leaves them.
_BARE = re.compile(r"[A-Za-z0-9\-._/@^+]+")
_STARTED = time.time()


def level_name(levelno: int) -> str:
    """Go's name of a Python level (levels between two take the lower one's name)."""
    for number in sorted(LEVEL_NAMES, reverse=True):
        if levelno >= number:
            return LEVEL_NAMES[number]
    return "debug"


def rfc3339(created: float) -> str:
    """Local time of `created` to the second, with its offset ("Z" for UTC)."""
    moment = datetime.datetime.fromtimestamp(created).astimezone()
    text = moment.isoformat(timespec="seconds")
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def fields_of(record: logging.LogRecord) -> dict[str, Any]:
    """The entry's own fields: what the call passed as `extra=`, and an exception's text."""
    fields = {k: v for k, v in record.__dict__.items() if k not in _STANDARD}
    if record.exc_info and record.exc_info[1] is not None:
        fields["error"] = logging.Formatter().formatException(record.exc_info)
    return fields


class JsonFormatter(logging.Formatter):
    """One JSON object a line: level, msg, time, then the entry's fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {"level": level_name(record.levelno),
                                 "msg": record.getMessage(), "time": rfc3339(record.created)}
        for key, value in fields_of(record).items():
            entry.setdefault(key, value)
        return json.dumps(entry, default=str, separators=(",", ":"))


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    return text if _BARE.fullmatch(text) else json.dumps(text)


class TextFormatter(logging.Formatter):
    """`key=value` pairs: time, level and msg first, then the fields by name."""

    def format(self, record: logging.LogRecord) -> str:
        pairs = [("time", rfc3339(record.created)), ("level", level_name(record.levelno)),
                 ("msg", record.getMessage()), *sorted(fields_of(record).items())]
        return " ".join(f"{k}={_text(v)}" for k, v in pairs)


class ColorFormatter(logging.Formatter):
    """The level (coloured) and seconds since start, the message, then coloured field names."""

    def format(self, record: logging.LogRecord) -> str:
        name = level_name(record.levelno)
        color = _COLORS[name]
        head = f"\x1b[{color}m{name.upper()[:4]}\x1b[0m[{int(record.created - _STARTED):04d}]"
        fields = "".join(f" \x1b[{color}m{k}\x1b[0m={_text(v)}"
                         for k, v in sorted(fields_of(record).items()))
        return f"{head} {record.getMessage():<44}{fields}"


FORMATTERS: dict[str, type[logging.Formatter]] = {
    "json": JsonFormatter, "text": TextFormatter, "color": ColorFormatter}

_handler: logging.Handler | None = None
_format = "text"


def configure(level: int, log_format: str) -> None:
    """Send the root logger's entries at `level` and above to stderr in `log_format`."""
    global _handler, _format
    root = logging.getLogger()
    if _handler is not None:
        root.removeHandler(_handler)
    _format = log_format if log_format in FORMATTERS else "text"
    _handler = logging.StreamHandler(sys.stderr)
    _handler.setFormatter(FORMATTERS[_format]())
    root.addHandler(_handler)
    root.setLevel(level)


def say(level: int, msg: str, *, plain: str | None = None, **fields: Any) -> None:
    """Write one entry of this process whatever the threshold.

    As json (when configured so) it is an entry of `msg` and `fields`;
    otherwise it is the `plain` line (default `msg`) alone, as a person or a
    script reads it.
    """
    if _format != "json" or _handler is None:
        print(msg if plain is None else plain, file=sys.stderr, flush=True)
        return
    record = logging.LogRecord("gazette", level, "", 0, msg, (), None)
    record.__dict__.update(fields)
    _handler.handle(record)
