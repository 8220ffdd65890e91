"""Time and duration flags.

`--from`/`--to` take RFC 3339 or unix seconds; every duration flag (`--since`,
`--timeout`, `--url-ttl`, ...) takes a Go duration like 90m or 1h30m, or bare
seconds like 2 or 0.5. A value that does not parse is a usage error.
"""

from __future__ import annotations

import re
import time
from datetime import datetime

from gazctl.usage import UsageError
from gazette_core.broker.protocol.durations_ext import parse_go_duration
from gazette_core.errors import ValidationError

_SECONDS = re.compile(r"\d+(\.\d*)?|\.\d+")


def parse_time(text: str, flag: str) -> int:
    """Unix seconds from `1700000000` or `2026-11-21T10:00:00Z` (an offset is required)."""
    text = text.strip()
    if not text:
        return 0
    if text.isdigit():
        return int(text)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(flag, f"expected unix seconds or an RFC 3339 time, got {text!r}"
                         ) from None
    if parsed.tzinfo is None:
        raise UsageError(flag, f"{text!r} has no time zone; add Z or an offset like +02:00")
    return int(parsed.timestamp())


def parse_duration(text: str, flag: str, positive: bool = False) -> float:
    """Seconds from a Go duration or bare seconds; never negative, and > 0 if `positive`."""
    text = text.strip()
    try:
        seconds = float(text) if _SECONDS.fullmatch(text) else parse_go_duration(text, flag)
    except ValidationError as exc:
        raise UsageError(flag, exc.reason) from None
    if seconds < 0 or (positive and seconds == 0):
        raise UsageError(flag, f"expected a positive duration, got {text!r}")
    return seconds


def since_to_unix(text: str, flag: str = "--since", now: float | None = None) -> int:
    """Unix seconds `text` (a duration like 90m, 2h30m or 3600) before now; 0 when empty."""
    if not text.strip():
        return 0
    seconds = parse_duration(text, flag)
    return int((time.time() if now is None else now) - seconds)
