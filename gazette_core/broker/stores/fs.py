"""File store: fragments as files under `<file_root><url path>` (`file:///<path>/` URLs).

Every file an operation touches must resolve (after `..` and symlinks) below
the file root: a store URL, a path rewrite or a link inside the root cannot
reach the rest of the broker's filesystem.

Writes go to a `.partial-*` file beside the target and are renamed into
place, so a listed file is always complete. The store root itself must
exist (a missing mount should fail loudly, not fill the root filesystem);
directories below it are created as needed.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TypeVar

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.fragment_ext import content_path
from gazette_core.broker.stores.base import (
    FragmentStore,
    StoreError,
    StoreNotFoundError,
    StorePermissionError,
    parse_listing,
)
from gazette_core.broker.stores.url import StoreURL

READ_CHUNK = 1 << 20
PARTIAL_PREFIX = ".partial-"
T = TypeVar("T")


class FileStore(FragmentStore):
    """Fragments stored as files below a local (or mounted) directory."""

    def __init__(self, url: StoreURL, file_root: str) -> None:
        self.url = url.raw
        self._url = url
        self._rewrite = url.rewrite
        self.file_root = file_root
        self.root = os.path.join(file_root, url.prefix)

    def path_of(self, fragment: pb.Fragment) -> str:
        """The file holding `fragment`."""
        path = os.path.join(self.root, self._rewrite.apply(content_path(fragment)))
        root = os.path.normpath(self.root)
        if os.path.commonpath([root, os.path.normpath(path)]) != root:
            raise StoreError(f"fragment path {path!r} escapes file store root {self.root!r}")
        return path

    def _inside(self, path: str) -> str:
        """`path`, once it resolves (symlinks too) below the file root; else StoreError.

        Checked again by every operation (in its worker thread), since links
        below the root may change at any time.
        """
        root = os.path.realpath(self.file_root)
        if os.path.commonpath([root, os.path.realpath(path)]) != root:
            raise StoreError(f"file store {self.url!r}: {path!r} escapes the file root "
                             f"{self.file_root!r}")
        return path

    async def _run(self, what: str, fn: Callable[[], T]) -> T:
        try:
            return await asyncio.to_thread(fn)
        except OSError as exc:
            kind = (StorePermissionError if isinstance(exc, PermissionError)
                    else StoreNotFoundError if isinstance(exc, FileNotFoundError)
                    else StoreError)
            raise kind(f"file store {self.url!r}: {what}: {exc}") from exc

    async def put(
        self, fragment: pb.Fragment, data: bytes, content_encoding: str | None = None
    ) -> None:
        # Files carry no Content-Encoding; readers decompress by the codec extension.
        path = self.path_of(fragment)
        await self._run(f"put {path}", lambda: self._write(self._inside(path), data))

    def _write(self, path: str, data: bytes) -> None:
        if not os.path.isdir(self.root):
            raise StoreError(
                f"file store {self.url!r}: root directory {self.root!r} does not exist"
            )
        directory = os.path.dirname(path)
        os.makedirs(directory, exist_ok=True)
        fd, partial = tempfile.mkstemp(prefix=PARTIAL_PREFIX, dir=directory)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(partial, path)
        except BaseException:
            os.unlink(partial)
            raise

    async def exists(self, fragment: pb.Fragment) -> bool:
        path = self.path_of(fragment)
        return await self._run(f"stat {path}", lambda: os.path.exists(self._inside(path)))

    async def list(self, journal: str) -> list[pb.Fragment]:
        prefix = os.path.join(self.root, self._rewrite.apply(journal + "/"))
        objects = await self._run(f"list {prefix}", lambda: list(_walk(self._inside(prefix))))
        return parse_listing(self.url, journal, objects)

    async def open(self, fragment: pb.Fragment) -> AsyncIterator[bytes]:
        path = self.path_of(fragment)
        handle = await self._run(f"open {path}",
                                 lambda: open(self._inside(path), "rb"))  # noqa: SIM115
        try:
            while chunk := await self._run(f"read {path}", lambda: handle.read(READ_CHUNK)):
                yield chunk
        finally:
            handle.close()

    async def delete(self, fragment: pb.Fragment) -> None:
        path = self.path_of(fragment)
        await self._run(f"delete {path}", lambda: os.remove(self._inside(path)))

    def sign_get(self, fragment: pb.Fragment, ttl_seconds: float) -> str:
        # Unsigned: a client resolves the path below its own file root.
        return "file://" + self._url.path + self._rewrite.apply(content_path(fragment))


def _walk(prefix: str) -> Iterator[tuple[str, float]]:
    """(path relative to `prefix`, mtime) of every file whose path starts with `prefix`."""
    top = prefix if prefix.endswith("/") else os.path.dirname(prefix)
    for directory, _, names in os.walk(top):
        for name in names:
            if name.startswith(PARTIAL_PREFIX):
                continue  # A write in progress, renamed into place when complete.
            path = os.path.join(directory, name)
            if not path.startswith(prefix):
                continue
            try:
                mtime = os.stat(path).st_mtime
            except FileNotFoundError:
                continue  # Deleted while listing.
            yield path[len(prefix) :], mtime
