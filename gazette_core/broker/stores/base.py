"""The FragmentStore interface shared by every store adapter.

Stores hold persisted fragments under content-addressed names
(`<prefix><rewrite(journal/postfix/name)>`,
docs/design/fragments.md#names-in-stores). Operations are
async; adapters run blocking IO in worker threads. `list` turns stored
object paths back into Fragments through `parse_listing`.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import AsyncIterator, Iterable

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.fragment_ext import parse_content_path
from gazette_core.errors import GazetteError, ValidationError

log = logging.getLogger(__name__)


class StoreError(GazetteError):
    """A fragment store could not be built or an operation on it failed."""


class StorePermissionError(StoreError):
    """The store refused an operation for lack of permission (credentials, ACLs, modes)."""


class StoreNotFoundError(StoreError):
    """The object an operation names is not in the store."""


class FragmentStore(abc.ABC):
    """A place persisted fragments are written to, listed from and read back."""

    url: str
    """The store URL exactly as configured, e.g. "file:///fragments/"."""

    @abc.abstractmethod
    async def put(
        self, fragment: pb.Fragment, data: bytes, content_encoding: str | None = None
    ) -> None:
        """Store `data` (already compressed) as the object of `fragment`."""

    @abc.abstractmethod
    async def exists(self, fragment: pb.Fragment) -> bool:
        """Whether the object of `fragment` is stored."""

    @abc.abstractmethod
    async def list(self, journal: str) -> list[pb.Fragment]:
        """Fragments stored under `<journal>/`, with backing_store and mod_time set."""

    @abc.abstractmethod
    def open(self, fragment: pb.Fragment) -> AsyncIterator[bytes]:
        """The stored (compressed) bytes of `fragment`, in chunks."""

    @abc.abstractmethod
    async def delete(self, fragment: pb.Fragment) -> None:
        """Remove the object of `fragment`.

        Raises StorePermissionError when the store refuses and StoreNotFoundError
        when the object is already gone (adapters that can tell).
        """

    @abc.abstractmethod
    def sign_get(self, fragment: pb.Fragment, ttl_seconds: float) -> str:
        """A URL from which a client may GET the object for `ttl_seconds`."""


def parse_listing(
    store_url: str, journal: str, objects: Iterable[tuple[str, float]]
) -> list[pb.Fragment]:
    """Fragments of `(path relative to "<journal>/", modification time)` pairs.

    Unparseable paths are skipped with a warning. As in Gazette, objects of a
    longer journal name below this one parse as fragments with a postfix.
    """
    fragments = []
    for relpath, mod_time in objects:
        try:
            fragment = parse_content_path(journal, relpath)
        except ValidationError as exc:
            log.warning("skipping unrecognized object %r in store %s: %s", relpath, store_url, exc)
            continue
        fragment.backing_store = store_url
        fragment.mod_time = int(mod_time)
        fragments.append(fragment)
    fragments.sort(key=lambda f: (f.begin, f.end, f.path_postfix))
    return fragments


class UnusableStore(FragmentStore):
    """A store whose construction failed; every operation reports why."""

    def __init__(self, url: str, reason: str) -> None:
        self.url = url
        self.reason = reason

    def _fail(self) -> StoreError:
        return StoreError(f"fragment store {self.url!r} is unusable: {self.reason}")

    async def put(
        self, fragment: pb.Fragment, data: bytes, content_encoding: str | None = None
    ) -> None:
        raise self._fail()

    async def exists(self, fragment: pb.Fragment) -> bool:
        raise self._fail()

    async def list(self, journal: str) -> list[pb.Fragment]:
        raise self._fail()

    async def open(self, fragment: pb.Fragment) -> AsyncIterator[bytes]:
        raise self._fail()
        yield b""  # Unreachable; makes this an async generator like other adapters.

    async def delete(self, fragment: pb.Fragment) -> None:
        raise self._fail()

    def sign_get(self, fragment: pb.Fragment, ttl_seconds: float) -> str:
        raise self._fail()
