"""GCS store: fragments as objects of `gs://<bucket>/<prefix>/`.

See docs/design/fragments.md#store-urls.

The google-cloud-storage client writes, probes, lists, streams, deletes and
signs; every blocking call runs in a worker thread. Credentials are the
application default credentials; signed URLs (V4) need them to hold a
service-account key, as in Gazette. The URL takes no query parameters
beyond find/replace.

With `STORAGE_EMULATOR_HOST` set (a local emulator), the client talks to
the emulator with anonymous credentials. Signing then uses the
service-account key file named by `GOOGLE_APPLICATION_CREDENTIALS` if
there is one, and otherwise hands out the emulator's plain download URL,
which the emulator serves without authentication. Importing this module
registers the `gs` scheme with the store registry.
"""

from __future__ import annotations

import asyncio
import datetime
import os
from collections.abc import AsyncIterator, Callable, Iterator
from typing import IO, Any, TypeVar
from urllib.parse import quote

import google.api_core.exceptions
import google.auth.credentials
import google.auth.exceptions
from google.cloud import storage
from google.oauth2 import service_account

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.fragment_ext import content_path
from gazette_core.broker.stores.base import (
    FragmentStore,
    StoreError,
    StoreNotFoundError,
    StorePermissionError,
    parse_listing,
)
from gazette_core.broker.stores.registry import StoreAdapter, register_adapter
from gazette_core.broker.stores.url import StoreURL
from gazette_core.errors import ValidationError

READ_CHUNK = 1 << 20
# Objects per list request (the GCS maximum).
LIST_PAGE_SIZE = 1000
EMULATOR_ENV = "STORAGE_EMULATOR_HOST"
KEY_FILE_ENV = "GOOGLE_APPLICATION_CREDENTIALS"
DENIED = (google.api_core.exceptions.Forbidden, google.api_core.exceptions.Unauthorized)
T = TypeVar("T")


class GCSStore(FragmentStore):
    """Fragments stored as objects under a name prefix of one GCS bucket."""

    def __init__(self, url: StoreURL, client: storage.Client, signer: Any | None) -> None:
        self.url = url.raw
        self.prefix = url.prefix
        self._rewrite = url.rewrite
        self._client = client
        self._bucket = client.bucket(url.host)
        self._signer = signer
        self._emulator = os.environ.get(EMULATOR_ENV, "")

    def name_of(self, fragment: pb.Fragment) -> str:
        """The object name holding `fragment`."""
        return self.prefix + self._rewrite.apply(content_path(fragment))

    async def _run(self, what: str, fn: Callable[[], T]) -> T:
        try:
            return await asyncio.to_thread(fn)
        except (google.api_core.exceptions.GoogleAPIError,
                google.auth.exceptions.GoogleAuthError, OSError, ValueError) as exc:
            raise _store_error(f"gs store {self.url!r}: {what}", exc) from exc

    async def put(
        self, fragment: pb.Fragment, data: bytes, content_encoding: str | None = None
    ) -> None:
        name = self.name_of(fragment)
        blob = self._bucket.blob(name)
        # Content-Encoding lets GCS (decompressive transcoding) or an HTTP
        # client decompress GZIP_OFFLOAD_DECOMPRESSION fragments on the fly.
        if content_encoding:
            blob.content_encoding = content_encoding
        await self._run(f"put {name}", lambda: blob.upload_from_string(
            data, content_type="application/octet-stream"))

    async def exists(self, fragment: pb.Fragment) -> bool:
        name = self.name_of(fragment)
        return await self._run(f"exists {name}", lambda: bool(self._bucket.blob(name).exists()))

    async def list(self, journal: str) -> list[pb.Fragment]:
        prefix = self.prefix + self._rewrite.apply(journal + "/")
        objects = await self._run(f"list {prefix}", lambda: list(self._walk(prefix)))
        return parse_listing(self.url, journal, objects)

    def _walk(self, prefix: str) -> Iterator[tuple[str, float]]:
        """(name relative to `prefix`, update time) of every object under `prefix`."""
        blobs = self._client.list_blobs(self._bucket, prefix=prefix, page_size=LIST_PAGE_SIZE)
        for blob in blobs:
            yield blob.name[len(prefix):], blob.updated.timestamp()

    async def open(self, fragment: pb.Fragment) -> AsyncIterator[bytes]:
        name = self.name_of(fragment)
        stream = await self._run(f"open {name}", lambda: self._open_stream(name))
        try:
            while chunk := await self._run(f"read {name}", lambda: stream.read(READ_CHUNK)):
                yield chunk
        finally:
            stream.close()

    def _open_stream(self, name: str) -> IO[bytes]:
        # raw_download: the stored bytes exactly as written, never transcoded
        # by their Content-Encoding.
        stream: IO[bytes] = self._bucket.blob(name).open(
            "rb", chunk_size=READ_CHUNK, raw_download=True)
        return stream

    async def delete(self, fragment: pb.Fragment) -> None:
        name = self.name_of(fragment)
        # GCS answers 404 for a missing object, which maps to StoreNotFoundError.
        await self._run(f"delete {name}", lambda: self._bucket.blob(name).delete())

    def sign_get(self, fragment: pb.Fragment, ttl_seconds: float) -> str:
        name = self.name_of(fragment)
        if self._signer is None and self._emulator:
            # The emulator authorizes nothing, so its plain URL is as good as a signed one.
            return f"{self._emulator.rstrip('/')}/{self._bucket.name}/{quote(name, safe='/~')}"
        if self._signer is None:
            raise StoreError(
                f"gs store {self.url!r}: sign {name}: the application default credentials "
                "hold no service-account key, which signed URLs need")
        try:
            url: str = self._bucket.blob(name).generate_signed_url(
                version="v4", method="GET", credentials=self._signer,
                expiration=datetime.timedelta(seconds=max(1, int(ttl_seconds))))
        except (google.auth.exceptions.GoogleAuthError, AttributeError, ValueError) as exc:
            raise _store_error(f"gs store {self.url!r}: sign {name}", exc) from exc
        return url


def _store_error(what: str, exc: BaseException) -> StoreError:
    """`exc` as the matching StoreError (403 and 401: permission; 404: not found)."""
    if isinstance(exc, DENIED):
        return StorePermissionError(f"{what}: {exc.message}")
    if isinstance(exc, google.api_core.exceptions.NotFound):
        return StoreNotFoundError(f"{what}: {exc.message}")
    if isinstance(exc, google.api_core.exceptions.GoogleAPICallError):
        return StoreError(f"{what}: {exc.message}")
    return StoreError(f"{what}: {exc}")


def _emulator_signer() -> Any | None:
    """The service-account key of GOOGLE_APPLICATION_CREDENTIALS, if it names one."""
    path = os.environ.get(KEY_FILE_ENV)
    if not path:
        return None
    try:
        return service_account.Credentials.from_service_account_file(path)
    except (OSError, ValueError, KeyError) as exc:
        raise ValidationError("store", f"cannot load the service-account key {path!r}: {exc}"
                              ) from exc


def new_client() -> tuple[storage.Client, Any | None]:
    """A GCS client and the credentials that sign URLs (None: none can).

    Under an emulator the client is anonymous (the SDK's own rule for
    STORAGE_EMULATOR_HOST), so only a key file can sign.
    """
    try:
        # project=None: objects are named by bucket, so no project lookup is needed.
        client = storage.Client(project=None)
    except (google.auth.exceptions.GoogleAuthError, ValueError) as exc:
        raise ValidationError("store", f"cannot create a GCS client: {exc}") from exc
    if os.environ.get(EMULATOR_ENV):
        return client, _emulator_signer()
    credentials = client._credentials
    signer = credentials if isinstance(credentials, google.auth.credentials.Signing) else None
    return client, signer


def build(url: StoreURL, file_root: str) -> GCSStore:
    """The registry's constructor for `gs://` URLs (`file_root` is unused)."""
    client, signer = new_client()
    return GCSStore(url, client, signer)


register_adapter("gs", StoreAdapter(build))
