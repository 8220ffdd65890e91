"""A test double of the recorder: applies every recorded op to a second directory.

It keeps the recorder's ordering contract: ops apply in call order, a barrier with a
pending `wait_for` holds back everything recorded after it, and a failed `wait_for`
breaks the recording (later ops are dropped, later barriers fail), as a crash-only
recorder does. `on_applied` sees the count of applied ops, for crash snapshots.
"""

from __future__ import annotations

import asyncio
import os
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path


class MirrorFile:
    def __init__(self, mirror: MirrorRecording) -> None:
        self._mirror = mirror
        self.fd = -1

    def write_at(self, data: bytes, offset: int) -> None:
        self._mirror.enqueue(lambda: self._write(data, offset))

    def _write(self, data: bytes, offset: int) -> None:
        assert self.fd >= 0, "write to a file that was never opened"
        os.pwrite(self.fd, data, offset)


class MirrorRecording:
    def __init__(self, source: Path, mirror: Path) -> None:
        self.source = source.absolute()
        self.mirror = mirror.absolute()
        self.mirror.mkdir(parents=True, exist_ok=True)
        self._queue: deque[Callable[[], None] | tuple[asyncio.Future[None], Awaitable[None]]]
        self._queue = deque()
        self._blocked = False
        self.broken: BaseException | None = None
        self.applied = 0
        self.on_applied: Callable[[int], None] | None = None
        # Open descriptors by mirror path: closed when their file is removed or replaced,
        # so a long test does not run out of descriptors.
        self._fds: dict[str, list[int]] = {}

    def target(self, path: str) -> str:
        rel = Path(path).relative_to(self.source)  # raises for paths outside the store
        return str(self.mirror / rel)

    # Recording protocol -------------------------------------------------------------
    def open_file(self, path: str, *, create: bool, truncate: bool) -> MirrorFile:
        file = MirrorFile(self)
        self.enqueue(lambda: self._open(file, self.target(path), create, truncate))
        return file

    def remove(self, path: str) -> None:
        self.enqueue(lambda: self._unlink(self.target(path)))

    def link(self, src: str, dst: str) -> None:
        self.enqueue(lambda: os.link(self.target(src), self.target(dst)))

    def rename(self, src: str, dst: str) -> None:
        self.enqueue(lambda: self._replace(self.target(src), self.target(dst)))

    def barrier(self, wait_for: Awaitable[None] | None = None) -> asyncio.Future[None]:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waited = asyncio.ensure_future(wait_for) if wait_for is not None else None
        self._queue.append((done, waited) if waited is not None else (done, _resolved()))
        self._pump()
        return done

    # ---------------------------------------------------------------------------------
    def _open(self, file: MirrorFile, target: str, create: bool, truncate: bool) -> None:
        exists = os.path.exists(target)
        assert exists or create, f"open of unknown {target} without create"
        if exists and truncate:
            self._unlink(target)  # a new Fnode, as the player builds it
        file.fd = os.open(target, os.O_RDWR | os.O_CREAT, 0o644)
        self._fds.setdefault(target, []).append(file.fd)

    def _unlink(self, target: str) -> None:
        os.unlink(target)
        self._close(target)

    def _replace(self, src: str, dst: str) -> None:
        os.replace(src, dst)
        self._close(dst)
        self._fds[dst] = self._fds.pop(src, [])

    def _close(self, target: str) -> None:
        for fd in self._fds.pop(target, []):
            os.close(fd)

    def enqueue(self, op: Callable[[], None]) -> None:
        self._queue.append(op)
        self._pump()

    def _pump(self) -> None:
        while self._queue and not self._blocked:
            item = self._queue[0]
            if isinstance(item, tuple):
                done, waited = item
                if not waited.done():
                    self._blocked = True
                    waited.add_done_callback(lambda _: self._unblock())
                    return
                self._queue.popleft()
                if self.broken is None and not waited.cancelled() and waited.exception():
                    self.broken = waited.exception()
                if self.broken is not None:
                    done.set_exception(RuntimeError(f"recording broken: {self.broken}"))
                else:
                    done.set_result(None)
                continue
            self._queue.popleft()
            if self.broken is None:
                item()
                self.applied += 1
                if self.on_applied is not None:
                    self.on_applied(self.applied)

    def _unblock(self) -> None:
        self._blocked = False
        self._pump()

    def close(self) -> None:
        for target in list(self._fds):
            self._close(target)


def _resolved() -> asyncio.Future[None]:
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    done.set_result(None)
    return done
