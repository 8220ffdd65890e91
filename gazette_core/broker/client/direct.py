"""Reading a persisted fragment straight from its store, through the read's `fragment_url`.

A Read with `do_not_proxy` gets only the metadata of a persisted fragment,
whose `fragment_url` is a signed GET URL (docs/design/protocol.md#read); the client fetches
the object itself, decompresses it by codec and discards what precedes the
offset it wants. `http(s)://` URLs are fetched as signed; `file://` URLs name
a path below the broker's file root, so they are readable only by a client
given the same root. For GZIP the client accepts the gzip encoding; for
GZIP_OFFLOAD_DECOMPRESSION it asks for identity and gunzips whatever the
store still sends encoded.
"""

from __future__ import annotations

import asyncio
import os
import urllib.request
from collections.abc import AsyncGenerator, AsyncIterator
from typing import IO, cast
from urllib.parse import unquote, urlsplit

from gazette_core.broker.fragment.remote import read_fragment
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.stores.base import FragmentStore
from gazette_core.errors import GazetteError

READ_CHUNK = 1 << 20
FETCH_TIMEOUT_S = 30.0


class DirectReadError(GazetteError):
    """A fragment could not be read from its `fragment_url`; the broker can still serve it."""

    retriable = True

    def __init__(self, fragment: pb.Fragment, reason: str) -> None:
        self.fragment = fragment
        super().__init__(f"direct read of {fragment.journal!r} [{fragment.begin}, "
                         f"{fragment.end}) failed: {reason}")


def fetchable(url: str, file_root: str | None) -> bool:
    """Whether this client can GET `url`: http(s), or file:// given a file root."""
    scheme = urlsplit(url).scheme
    return scheme in ("http", "https") or (scheme == "file" and file_root is not None)


async def read_direct(fragment: pb.Fragment, url: str, offset: int,
                      file_root: str | None = None) -> AsyncGenerator[bytes, None]:
    """The fragment's content from journal `offset` to its end, fetched from `url`.

    Raises DirectReadError on any failure: fetching, decoding, or content
    that does not end exactly at the fragment's end.
    """
    try:
        stream, encoded = await asyncio.to_thread(_open, fragment, url, file_root)
    except (OSError, ValueError) as exc:
        raise DirectReadError(fragment, str(exc)) from exc
    source = _Fetched(stream)
    decode = pb.Fragment()
    decode.CopyFrom(fragment)
    # Metrics label what was fetched, as Go does: gzip still encoded is GZIP.
    label = fragment.compression_codec
    if fragment.compression_codec == pb.GZIP_OFFLOAD_DECOMPRESSION:
        if encoded:
            label = pb.GZIP
        else:
            decode.compression_codec = pb.NONE  # The store decompressed it for us.
    try:
        # read_fragment only opens the object: the fetched stream stands in for a store.
        async for piece in read_fragment(cast(FragmentStore, source), decode, offset,
                                         codec=label):
            yield piece
    except (GazetteError, OSError, ValueError) as exc:
        raise DirectReadError(fragment, str(exc)) from exc
    finally:
        stream.close()


def _open(fragment: pb.Fragment, url: str, file_root: str | None) -> tuple[IO[bytes], bool]:
    """An open stream of the stored object, and whether it is still gzip-encoded."""
    parts = urlsplit(url)
    if parts.scheme == "file":
        if file_root is None:
            raise ValueError(f"{url} is below the broker's file root, which this client lacks")
        root = os.path.normpath(file_root)
        path = os.path.normpath(os.path.join(root, unquote(parts.path).lstrip("/")))
        if os.path.commonpath([root, path]) != root:
            raise ValueError(f"{url} escapes the file root {file_root!r}")
        return open(path, "rb"), False  # Closed by read_direct.
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"cannot fetch {parts.scheme}:// fragment URLs")
    accept = "gzip" if fragment.compression_codec == pb.GZIP else "identity"
    request = urllib.request.Request(url, headers={"Accept-Encoding": accept})
    response = urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_S)
    return response, response.headers.get("Content-Encoding", "").lower() == "gzip"


class _Fetched:
    """The fetched object's bytes in chunks, read in a worker thread."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream

    async def open(self, fragment: pb.Fragment) -> AsyncIterator[bytes]:
        while chunk := await asyncio.to_thread(self._stream.read, READ_CHUNK):
            yield chunk
