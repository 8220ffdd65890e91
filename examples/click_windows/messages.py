"""The click-windows messages: Click (input) and WindowCount (the job's output), as JSON lines."""

from __future__ import annotations

from gazette_core.message.structs import StructMessage

CLICKS_JOURNAL = "examples/click-windows/clicks"
COUNTS_JOURNAL = "examples/click-windows/counts"


class Click(StructMessage):
    """`user` opened `page` at `ts` (event time: ISO 8601, UTC, e.g. 2026-01-01T00:00:05.250Z)."""

    user: str = ""
    page: str = ""
    ts: str = ""


class WindowCount(StructMessage):
    """`clicks` of `user` with a `ts` in [window_start, window_end), formatted as Click.ts."""

    user: str = ""
    window_start: str = ""
    window_end: str = ""
    clicks: int = 0
