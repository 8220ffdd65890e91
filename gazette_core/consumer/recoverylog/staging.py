"""Staging: the local side of playback, in `<dir>/.fnodes/` until made live.

Playback cannot write files under their recorded paths as it goes: a path
can be linked, unlinked and re-linked to other Fnodes many times over a log.
So each live Fnode is one staged file named by its id, and only once the log
is played are those files hard-linked to every path the FSM says they have.
"""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING

from gazette_core.consumer.recoverylog.playback_errors import PlaybackError

if TYPE_CHECKING:
    from gazette_core.consumer.recoverylog.fsm import FSM

STAGING = ".fnodes"


class Staging:
    """Staged Fnode files under `directory`, with open descriptors kept for writes."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.root = os.path.join(directory, STAGING)
        self._fds: dict[int, int] = {}

    def prepare(self) -> None:
        """Remove `directory` entirely and create an empty staging area in it."""
        shutil.rmtree(self.directory, ignore_errors=True)
        os.makedirs(self.root)

    def _path(self, fnode: int) -> str:
        return os.path.join(self.root, str(fnode))

    def create(self, fnode: int) -> None:
        # Exclusive: an Fnode id is a seq_no, so a second create of it is a bug.
        self._fds[fnode] = os.open(self._path(fnode), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)

    def write(self, fnode: int, offset: int, data: bytes | memoryview) -> None:
        fd = self._fds[fnode]
        view = memoryview(data)
        while view:
            n = os.pwrite(fd, view, offset)
            view, offset = view[n:], offset + n

    def remove(self, fnode: int) -> None:
        fd = self._fds.pop(fnode, None)
        if fd is not None:
            os.close(fd)
        os.unlink(self._path(fnode))

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def abort(self) -> None:
        """Drop everything: a failed playback leaves no half-built directory."""
        self.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def make_live(self, fsm: FSM) -> None:
        """Link every live Fnode at each of its paths, drop staging, write properties."""
        self.close()
        for fnode, paths in sorted(fsm.live_nodes.items()):
            for path in sorted(paths):
                target = self._local(path)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                os.link(self._path(fnode), target)
        shutil.rmtree(self.root)
        for path, content in sorted(fsm.properties.items()):
            target = self._local(path)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "x", encoding="utf-8") as f:  # Must not already exist.
                f.write(content)

    def _local(self, path: str) -> str:
        """The local file for a recorded path (rooted at `directory`, leading `/`)."""
        rel = os.path.normpath(path.lstrip("/"))
        if rel.startswith("..") or os.path.isabs(rel) or rel in (".", STAGING):
            raise PlaybackError(f"recorded path {path!r} is outside the directory")
        return os.path.join(self.directory, rel)
