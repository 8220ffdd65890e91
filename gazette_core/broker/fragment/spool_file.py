"""The unlinked temporary file behind a spool's content.

A `SpoolFile` holds one fragment's bytes from its `begin` offset. It is shared
by the spool writing it, the completed spool awaiting persistence and any
index entry serving reads, so it closes itself only when the last of them
lets go (a finalizer), never while a reader might still use the descriptor.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
import weakref
from collections.abc import Iterator

from gazette_core.errors import GazetteError

# What a full file system looks like to a writer: out of blocks, or of quota.
_FULL = (errno.ENOSPC, errno.EDQUOT)


class SpoolFullError(GazetteError):
    """The spool directory's file system has no room for more content."""

    grpc_code = "RESOURCE_EXHAUSTED"

    def __init__(self, directory: str, code: int) -> None:
        self.directory = directory
        reason = os.strerror(code)
        super().__init__(f"spool directory {directory} is full: {reason[:1].lower()}{reason[1:]}")


@contextlib.contextmanager
def _full_is_spool_full(directory: str | None) -> Iterator[None]:
    """Turn a full file system into SpoolFullError, naming the spool directory."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in _FULL:
            raise
        raise SpoolFullError(directory or tempfile.gettempdir(), exc.errno) from None


class SpoolFile:
    """Positional reads and writes on an anonymous file, addressed by journal offset."""

    __slots__ = ("__weakref__", "_directory", "_fd", "_finalizer", "begin")

    def __init__(self, begin: int, directory: str | None = None) -> None:
        with _full_is_spool_full(directory):
            fd, path = tempfile.mkstemp(prefix="spool-", dir=directory)
        # Unlinked at once: the content lives only as long as the descriptor.
        os.unlink(path)
        self.begin = begin
        self._directory = directory
        self._fd = fd
        self._finalizer = weakref.finalize(self, os.close, fd)

    def write(self, position: int, data: bytes) -> None:
        """Write `data` at `position` bytes past `begin`; SpoolFullError when there is no room."""
        with _full_is_spool_full(self._directory):
            written = os.pwrite(self._fd, data, position)
            while written < len(data):
                # Regular files rarely write short, but a full disk may.
                view = memoryview(data)[written:]
                step = os.pwrite(self._fd, view, position + written)
                if step == 0:
                    raise OSError(errno.ENOSPC, "short write to spool file")
                written += step

    def read_at(self, offset: int, size: int) -> bytes:
        """Up to `size` bytes at journal `offset`; the caller bounds reads to committed content."""
        if offset < self.begin:
            raise ValueError(f"offset {offset} is before the spool file begin {self.begin}")
        chunks: list[bytes] = []
        position = offset - self.begin
        while size > 0:
            chunk = os.pread(self._fd, size, position)
            if not chunk:
                break
            chunks.append(chunk)
            position += len(chunk)
            size -= len(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def reset(self, begin: int) -> None:
        """Reuse the file for a fragment at `begin`; only valid while nothing else holds it."""
        os.ftruncate(self._fd, 0)
        self.begin = begin
