"""Errors that end a playback (the target directory is removed when they do)."""

from __future__ import annotations

from gazette_core.errors import GazetteError


class PlaybackError(GazetteError):
    """Playback cannot rebuild the directory from this log and these hints."""


class UnreadHintsError(PlaybackError):
    """The write head was reached while hinted ops were still unread."""


class DataLossError(PlaybackError):
    """Hints refer to log content at or beyond the log's write head."""


class OffsetJumpError(PlaybackError):
    """Content of the hinted segment being read is gone from the log."""
