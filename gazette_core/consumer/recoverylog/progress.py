"""Playback progress: what a caller polls while a Player rebuilds a directory.

Recovery of a large log can take minutes; operators want to see how far it
is and how long it will take. The player updates one `Progress` in place.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class Progress:
    """How far playback is.

    `offset` is the position in `log`, `target_head` the write head playback
    aims for (learned by the barrier, moving on if the log grows),
    `bytes_read` the content received so far (dead regions skipped by
    seeking are not read, so it can stay well below `offset`).
    """

    log: str = ""
    offset: int = 0
    start_offset: int = 0
    target_head: int = 0
    bytes_read: int = 0
    at_head: bool = False
    started: float = field(default_factory=time.monotonic)

    @property
    def remaining(self) -> int:
        """Bytes of the log between the current position and the target head."""
        return max(0, self.target_head - self.offset)

    @property
    def fraction(self) -> float:
        """Share of the way from where playback started to the target head (0..1)."""
        if self.at_head:
            return 1.0
        span = self.target_head - self.start_offset
        if span <= 0:
            return 0.0
        return min(1.0, max(0.0, (self.offset - self.start_offset) / span))

    def eta(self, now: float | None = None) -> float | None:
        """Estimated seconds to the target head at the rate so far; None before any progress."""
        if self.at_head:
            return 0.0
        elapsed = (time.monotonic() if now is None else now) - self.started
        covered = self.offset - self.start_offset
        if covered <= 0 or elapsed <= 0:
            return None
        return self.remaining * elapsed / covered
