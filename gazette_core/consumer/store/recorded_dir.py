"""A directory of real files whose every mutation is also sent to a `Recording`.

Writes land on disk at once; their recording is coalesced while they stay contiguous
(up to `FLUSH_BYTES`) and flushed at fsync, close, truncate or a non-contiguous write,
which is when a disk would make them durable too. `fsync` does no disk fsync: the
recovery log is what makes data durable, so it flushes and returns a recording barrier.

The recovery log has no truncate op. A truncate to zero is recorded as an open with
truncate (an unlink plus a new create); a shrink to a non-zero size is recorded the same
way followed by a rewrite of the bytes kept, and growth as a write of zeros.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable
from pathlib import Path

from gazette_core.consumer.store.recording import FileRecording, Recording

FLUSH_BYTES = 128 * 1024
_COPY_CHUNK = 1 << 20


class RecordedFnode:
    """The recording side of one open file: coalesces writes and records truncates."""

    def __init__(self, recording: Recording, path: str, *, create: bool, truncate: bool) -> None:
        self._recording = recording
        self.path = path
        self._file: FileRecording = recording.open_file(path, create=create, truncate=truncate)
        self._pending = bytearray()
        self._pending_at = 0

    def wrote(self, data: bytes, offset: int) -> None:
        """Record that `data` was written at `offset` of the local file."""
        if self._pending and offset == self._pending_at + len(self._pending):
            self._pending += data
        else:
            self.flush()
            self._pending = bytearray(data)
            self._pending_at = offset
        if len(self._pending) >= FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            self._file.write_at(bytes(self._pending), self._pending_at)
            self._pending = bytearray()

    def recreate(self) -> None:
        """Record the file as emptied: a new Fnode at the same path."""
        self._pending = bytearray()
        self._file = self._recording.open_file(self.path, create=False, truncate=True)

    def truncated(self, old_size: int, new_size: int) -> None:
        """Record a truncate of the local file (already done) from `old_size` to `new_size`."""
        if new_size >= old_size:
            self.flush()
            if new_size > old_size:
                self.wrote(bytes(new_size - old_size), old_size)
            return
        self.recreate()
        with open(self.path, "rb") as kept:
            offset = 0
            while offset < new_size:
                chunk = kept.read(min(_COPY_CHUNK, new_size - offset))
                if not chunk:
                    break
                self._file.write_at(chunk, offset)
                offset += len(chunk)


class RecordedFile:
    """A read-write file of a RecordedDir."""

    def __init__(self, owner: RecordedDir, path: str, fd: int, fnode: RecordedFnode) -> None:
        self._owner = owner
        self.path = path
        self._fd = fd
        self._fnode = fnode
        self.position = 0

    def write_at(self, data: bytes, offset: int) -> None:
        os.pwrite(self._fd, data, offset)
        self._fnode.wrote(data, offset)

    def write(self, data: bytes) -> None:
        """Write at the current position and move past it."""
        self.write_at(data, self.position)
        self.position += len(data)

    def read_at(self, size: int, offset: int) -> bytes:
        return os.pread(self._fd, size, offset)

    def size(self) -> int:
        return os.fstat(self._fd).st_size

    def truncate(self, size: int) -> None:
        old = self.size()
        os.ftruncate(self._fd, size)
        self._fnode.truncated(old, size)

    def fsync(self) -> Awaitable[None]:
        self._fnode.flush()
        return self._owner.fsync()

    def close(self) -> None:
        if self._fd >= 0:
            self._fnode.flush()
            os.close(self._fd)
            self._fd = -1
            self._owner.closed(self)


class RecordedDir:
    """Files under `root` (absolute) whose mutations are recorded as they happen."""

    def __init__(self, root: str | Path, recording: Recording) -> None:
        self.root = Path(root).absolute()
        self.recording = recording
        self._open: set[RecordedFile] = set()
        self.root.mkdir(parents=True, exist_ok=True)

    def path(self, name: str) -> str:
        """The absolute path of `name`, which must stay inside the directory."""
        full = os.path.normpath(self.root / name)
        if not full.startswith(str(self.root) + os.sep):
            raise ValueError(f"path {name!r} is outside the store directory")
        return full

    def open(self, name: str, *, create: bool = False, truncate: bool = False) -> RecordedFile:
        path = self.path(name)
        flags = os.O_RDWR | (os.O_CREAT if create else 0) | (os.O_TRUNC if truncate else 0)
        fd = os.open(path, flags, 0o644)
        try:
            fnode = RecordedFnode(self.recording, path, create=create, truncate=truncate)
        except BaseException:
            os.close(fd)
            raise
        file = RecordedFile(self, path, fd, fnode)
        self._open.add(file)
        return file

    def read_bytes(self, name: str) -> bytes | None:
        """The content of `name`, or None if it does not exist (reads are not recorded)."""
        try:
            return Path(self.path(name)).read_bytes()
        except FileNotFoundError:
            return None

    def exists(self, name: str) -> bool:
        return os.path.exists(self.path(name))

    def rename(self, src: str, dst: str) -> None:
        source, target = self.path(src), self.path(dst)
        os.replace(source, target)
        self.recording.rename(source, target)

    def remove(self, name: str) -> None:
        path = self.path(name)
        os.unlink(path)
        self.recording.remove(path)

    def link(self, src: str, dst: str) -> None:
        source, target = self.path(src), self.path(dst)
        os.link(source, target)
        self.recording.link(source, target)

    def fsync(self) -> Awaitable[None]:
        """Flush every open file's recording, then a barrier that resolves once committed."""
        for file in list(self._open):
            file._fnode.flush()
        return self.recording.barrier(None)

    def closed(self, file: RecordedFile) -> None:
        self._open.discard(file)
