"""Helpers for the SQLite store tests: reading every table of a database."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import apsw


def tables(conn: apsw.Connection) -> dict[str, list[tuple[Any, ...]]]:
    """Every user table's rows, ordered by rowid."""
    names = [
        row[0]
        for row in conn.execute(
            "SELECT name FROM sqlite_schema WHERE type='table' AND name NOT LIKE 'sqlite_%'"
        )
    ]
    return {
        name: [tuple(r) for r in conn.execute(f'SELECT * FROM "{name}" ORDER BY rowid')]
        for name in sorted(names)
    }


def open_plain(directory: Path) -> apsw.Connection:
    """The database of `directory` opened as plain SQLite (recovering any hot journal)."""
    return apsw.Connection(str(directory / "primary.db"))


def plain_contents(directory: Path) -> tuple[str, dict[str, list[tuple[Any, ...]]]]:
    """`PRAGMA integrity_check`'s verdict and every table of `directory`'s database.

    It opens a copy: opening recovers journals and checkpoints the WAL, which must not
    change a directory still being written.
    """
    copy = Path(tempfile.mkdtemp(dir=directory.parent, prefix=f"{directory.name}-opened-"))
    shutil.copytree(directory, copy, dirs_exist_ok=True)
    conn = open_plain(copy)
    try:
        verdict = ";".join(str(r[0]) for r in conn.execute("PRAGMA integrity_check"))
        return verdict, tables(conn)
    finally:
        conn.close()
