"""`df.write.format("gazette")` appends unless told otherwise: the default save mode is append.

Spark's default save mode (errorifexists) is refused by the JVM before our
writer runs, for every Python data source, with a hint to use append or
overwrite, and overwrite is refused by us (journals are append-only). So
`register` makes a writer whose format is set to `gazette` with no save mode
yet take mode append; a mode given before or after still wins.
"""

from __future__ import annotations

import functools
from typing import Any

_PATCHED = "_gazette_appends_by_default"
_EXPLICIT = "_gazette_mode_given"


def default_to_append(format_name: str) -> None:
    """Make `DataFrameWriter.format(format_name)` set mode append when no mode was given
    (idempotent)."""
    from pyspark.sql.readwriter import DataFrameWriter

    if getattr(DataFrameWriter, _PATCHED, False):
        return
    given_mode = DataFrameWriter.mode
    given_format = DataFrameWriter.format

    @functools.wraps(given_mode)
    def mode(self: Any, saveMode: str | None) -> Any:
        if saveMode is not None:
            setattr(self, _EXPLICIT, True)
        return given_mode(self, saveMode)

    @functools.wraps(given_format)
    def format(self: Any, source: str) -> Any:
        out = given_format(self, source)
        if source == format_name and not getattr(self, _EXPLICIT, False):
            given_mode(self, "append")
        return out

    DataFrameWriter.mode = mode  # type: ignore[method-assign]
    DataFrameWriter.format = format  # type: ignore[method-assign]
    setattr(DataFrameWriter, _PATCHED, True)
