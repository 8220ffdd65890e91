"""Compaction of the recorded SQLite database: rewrite it whole into a new file.

The main database file is one Fnode for as long as it exists, so every page write it
ever received stays in the hints and playback replays all of them. Compaction rewrites
the database with `VACUUM INTO` a sibling file (recorded as a create and its writes),
then renames it over the database (a recorded rename), so the old Fnode dies and
recovery reads only the new file's writes and what follows.

Crash safety rests on the order of the recorded ops. Until the rename the old database
is whole and the sibling is a stray file a reopen removes (or, cut inside the rename,
installs). Before the rename the
connection is closed after a truncating checkpoint, and any WAL or journal left is
removed, so no log frame of the old database can ever be applied to the new one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import apsw

from gazette_core.consumer.store.recording import Recording

COMPACT_SUFFIX = "-compact"
_SIDE_FILES = ("-wal", "-journal", "-shm")


@dataclass
class CompactionPolicy:
    """Compact automatically once the bytes written to the database file since it was
    last written whole exceed `ratio` x its size (and at least `floor` bytes).

    `ratio=None` turns automatic compaction off; `compact()` still works.
    """

    ratio: float | None = 4.0
    floor: int = 1 << 20

    def due(self, written: int, size: int) -> bool:
        if self.ratio is None:
            return False
        return written > max(self.ratio * size, self.floor)


def recover_interrupted(db_path: str, recording: Recording) -> None:
    """Finish or undo a compaction a crash (or a log cut) interrupted; run before opening.

    The recorded rename is an unlink of the database followed by a link of the sibling,
    so a log may end between them: the database is gone and the sibling, complete since
    the rename comes after it is closed, takes its place. Otherwise a sibling left by a
    compaction that never reached its rename is removed.
    """
    stray = db_path + COMPACT_SUFFIX
    if os.path.exists(stray) and not os.path.exists(db_path):
        install_compacted(stray, db_path, recording)
        return
    # Only files SQLite opened through the recorded VFS (never a shared-memory index).
    for path in (stray, stray + "-journal", stray + "-wal"):
        if os.path.exists(path):
            os.unlink(path)
            recording.remove(path)


def write_compacted(conn: apsw.Connection, db_path: str, recording: Recording) -> str:
    """Checkpoint the WAL and write the whole database into its sibling; its path.

    Runs on the store's worker thread with no transaction open.
    """
    recover_interrupted(db_path, recording)
    row = conn.execute("PRAGMA journal_mode").fetchone()
    if row is not None and str(row[0]).lower() == "wal":
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    target = db_path + COMPACT_SUFFIX
    # The sibling is opened through the store's VFS, so its writes are recorded.
    conn.execute("VACUUM INTO ?", (target,))
    return target


def install_compacted(target: str, db_path: str, recording: Recording) -> None:
    """Replace the database with `target`; the connection to it must be closed.

    Stale WAL and journal files go first: once the rename is in the log, a WAL of the
    old database next to the new one would be replayed into it.
    """
    for side in _SIDE_FILES:
        path = db_path + side
        if os.path.exists(path):
            os.unlink(path)
            if side != "-shm":
                recording.remove(path)
    os.replace(target, db_path)
    recording.rename(target, db_path)
