"""An apsw VFS whose database, rollback-journal and WAL files are recorded.

Files do their I/O through SQLite's default VFS; this layer only records. Temporary files
(statement journals, temp databases) and read-only opens are not recorded. Syncs are not
passed to the OS: durability comes from the recovery log, so a sync flushes the file's
coalesced writes and issues a recording barrier nobody waits on (the store's commit
barrier is what it awaits).

A journal or WAL write at offset 0 that starts a new generation (a PERSIST-mode journal
invalidation `00000000`, or a WAL header `377f0682`/`377f0683`) is recorded as a truncate,
so the old content leaves the live set and recovery does not replay it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any

import apsw

from gazette_core.consumer.store.recorded_dir import RecordedFnode
from gazette_core.consumer.store.recording import Recording

_RECORDED_KINDS = (
    apsw.SQLITE_OPEN_MAIN_DB
    | apsw.SQLITE_OPEN_MAIN_JOURNAL
    | apsw.SQLITE_OPEN_WAL
    | apsw.SQLITE_OPEN_SUPER_JOURNAL
)
_LOG_KINDS = apsw.SQLITE_OPEN_MAIN_JOURNAL | apsw.SQLITE_OPEN_WAL | apsw.SQLITE_OPEN_SUPER_JOURNAL
_RESTART_MAGIC = (b"\x00\x00\x00\x00", b"\x37\x7f\x06\x82", b"\x37\x7f\x06\x83")


class RecordedVFS(apsw.VFS):  # type: ignore[misc]
    """Registered under `name`; records files under `root` (an absolute directory)."""

    def __init__(self, name: str, root: str, recording: Recording) -> None:
        self.root = os.path.abspath(root)
        self.recording = recording
        self.vfs_name = name
        # Bytes written per recorded path since the count was reset (compaction policy).
        self.written: dict[str, int] = {}
        super().__init__(name, "")

    def is_recorded(self, path: str | None) -> bool:
        return path is not None and path.startswith(self.root + os.sep)

    def xFullPathname(self, name: str) -> str:
        # Names stay as given (made absolute), symlinks unresolved: the default VFS would
        # resolve them, move recorded paths out from under `root`, and report the
        # resolution as an error through apsw (SQLITE_OK_SYMLINK).
        return os.path.abspath(name)

    def xOpen(self, name: Any, flags: list[int]) -> apsw.VFSFile:
        path = name.filename() if isinstance(name, apsw.URIFilename) else name
        kind = flags[0]
        if (
            self.is_recorded(path)
            and kind & _RECORDED_KINDS
            and kind & apsw.SQLITE_OPEN_READWRITE
        ):
            return RecordedVFSFile(self, name, flags, path, kind)
        return apsw.VFSFile("", name, flags)

    def xDelete(self, filename: str, syncdir: bool) -> None:
        existed = os.path.exists(filename)
        super().xDelete(filename, syncdir)
        if existed and self.is_recorded(filename) and not filename.endswith("-shm"):
            self.recording.remove(filename)

    def sync_barrier(self) -> None:
        """A barrier nobody waits on; its failure is kept for the commit barrier to report."""
        waiter = self.recording.barrier(None)
        if isinstance(waiter, asyncio.Future):
            waiter.add_done_callback(retrieve)


def retrieve(future: asyncio.Future[None]) -> None:
    if not future.cancelled():
        future.exception()


class RecordedVFSFile(apsw.VFSFile):  # type: ignore[misc]
    """A database, journal or WAL file whose writes and truncates are recorded."""

    def __init__(self, vfs: RecordedVFS, name: Any, flags: list[int], path: str, kind: int) -> None:
        super().__init__("", name, flags)
        self._vfs = vfs
        self._path = path
        self._is_log = bool(kind & _LOG_KINDS)
        create = bool(kind & apsw.SQLITE_OPEN_CREATE)
        self._fnode = RecordedFnode(vfs.recording, path, create=create, truncate=False)

    def xWrite(self, data: bytes, offset: int) -> None:
        super().xWrite(data, offset)
        if self._is_log and offset == 0 and bytes(data[:4]) in _RESTART_MAGIC:
            self._fnode.recreate()
        self._fnode.wrote(bytes(data), offset)
        self._vfs.written[self._path] = self._vfs.written.get(self._path, 0) + len(data)

    def xTruncate(self, newsize: int) -> None:
        old = self.xFileSize()
        super().xTruncate(newsize)
        self._fnode.truncated(old, newsize)

    def xSync(self, flags: int) -> None:
        self._fnode.flush()
        self._vfs.sync_barrier()

    def xClose(self) -> None:
        self._fnode.flush()
        super().xClose()


def unregister(vfs: RecordedVFS, on_error: Callable[[Exception], None] | None = None) -> None:
    """Remove the VFS from SQLite's registry (after every connection using it closed)."""
    try:
        vfs.unregister()
    except Exception as exc:
        if on_error is not None:
            on_error(exc)
