"""Time flags: `--from`/`--to` as RFC 3339 or unix seconds, `--since` as a duration."""

from __future__ import annotations

import time
from datetime import datetime

from gazette_core.broker.protocol.durations_ext import parse_go_duration
from gazette_core.errors import ValidationError


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
        raise ValidationError(flag, f"expected unix seconds or an RFC 3339 time, got {text!r}"
                              ) from None
    if parsed.tzinfo is None:
        raise ValidationError(flag, f"{text!r} has no time zone; add Z or an offset like +02:00")
    return int(parsed.timestamp())


def since_to_unix(text: str, flag: str = "--since", now: float | None = None) -> int:
    """Unix seconds `text` (a Go duration like 90m or 2h30m) before now; 0 when empty."""
    if not text.strip():
        return 0
    seconds = parse_go_duration(text.strip(), flag)
    if seconds < 0:
        raise ValidationError(flag, f"expected a positive duration, got {text!r}")
    return int((time.time() if now is None else now) - seconds)
