"""In-process store for `memory://<name>/` URLs, for tests and benchmarks.

Stores with the same name share one bucket of objects for the life of the
process, so a broker and a test can see each other's writes. An object's
mod_time is the (whole-second) time it was put.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.fragment_ext import content_path
from gazette_core.broker.stores.base import FragmentStore, StoreNotFoundError, parse_listing
from gazette_core.broker.stores.url import StoreURL

READ_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class StoredObject:
    """One stored object: its bytes, put time and Content-Encoding."""

    data: bytes
    mod_time: float
    content_encoding: str | None


_BUCKETS: dict[str, dict[str, StoredObject]] = {}


class MemoryStore(FragmentStore):
    """Objects in a process-wide dict keyed by the URL's host name."""

    def __init__(self, url: StoreURL, file_root: str = "") -> None:
        self.url = url.raw
        self._url = url
        self._rewrite = url.rewrite
        self._objects = _BUCKETS.setdefault(url.host, {})

    def key_of(self, fragment: pb.Fragment) -> str:
        """The object key of `fragment` within the bucket."""
        return self._url.prefix + self._rewrite.apply(content_path(fragment))

    def object(self, fragment: pb.Fragment) -> StoredObject:
        """The stored object of `fragment` (raises StoreError when absent)."""
        key = self.key_of(fragment)
        try:
            return self._objects[key]
        except KeyError:
            raise StoreNotFoundError(f"memory store {self.url!r}: no object {key!r}") from None

    async def put(
        self, fragment: pb.Fragment, data: bytes, content_encoding: str | None = None
    ) -> None:
        self._objects[self.key_of(fragment)] = StoredObject(
            bytes(data), time.time(), content_encoding
        )

    async def exists(self, fragment: pb.Fragment) -> bool:
        return self.key_of(fragment) in self._objects

    async def list(self, journal: str) -> list[pb.Fragment]:
        prefix = self._url.prefix + self._rewrite.apply(journal + "/")
        listed = [
            (key[len(prefix) :], obj.mod_time)
            for key, obj in list(self._objects.items())
            if key.startswith(prefix)
        ]
        return parse_listing(self.url, journal, listed)

    async def open(self, fragment: pb.Fragment) -> AsyncIterator[bytes]:
        data = self.object(fragment).data
        for start in range(0, len(data), READ_CHUNK):
            yield data[start : start + READ_CHUNK]

    async def delete(self, fragment: pb.Fragment) -> None:
        self.object(fragment)
        del self._objects[self.key_of(fragment)]

    def sign_get(self, fragment: pb.Fragment, ttl_seconds: float) -> str:
        return f"memory://{self._url.host}/{self.key_of(fragment)}"
