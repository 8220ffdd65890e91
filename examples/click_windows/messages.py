"""The click-windows messages: Click (input) and WindowCount (the job's output), as JSON lines."""

from __future__ import annotations

from dataclasses import dataclass

from gazette_core.message.interfaces import JSONMessage

CLICKS_JOURNAL = "examples/click-windows/clicks"
COUNTS_JOURNAL = "examples/click-windows/counts"


@dataclass
class Click(JSONMessage):
    """`user` opened `page` at `ts` (event time: ISO 8601, UTC, e.g. 2026-01-01T00:00:05.250Z)."""

    uuid: str = ""
    user: str = ""
    page: str = ""
    ts: str = ""


@dataclass
class WindowCount(JSONMessage):
    """`clicks` of `user` with a `ts` in [window_start, window_end), formatted as Click.ts."""

    uuid: str = ""
    user: str = ""
    window_start: str = ""
    window_end: str = ""
    clicks: int = 0
