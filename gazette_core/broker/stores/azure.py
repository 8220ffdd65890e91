"""Azure Blob stores: `azure://` (shared key) and `azure-ad://` (Azure AD).

See docs/design/fragments.md#store-urls.

`azure://<container>/<prefix>/` authenticates with the storage account's
shared key from AZURE_ACCOUNT_NAME and AZURE_ACCOUNT_KEY, at
`https://<account>.blob.core.windows.net`, and signs read URLs as service
SAS. When AZURE_STORAGE_CONNECTION_STRING is set (a local Azurite, say) it
supplies the account, key and blob endpoint instead.

`azure-ad://<tenant-id>/<account>/<container>/<prefix>/` authenticates as
the service principal AZURE_CLIENT_ID / AZURE_CLIENT_SECRET of that tenant
and signs read URLs as user-delegation SAS, with a delegation key cached
for a day. Neither form takes query parameters beyond find/replace.

azure-storage-blob does the IO, each blocking call in a worker thread.
Importing this module registers both schemes with the store registry.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import os
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar
from urllib.parse import quote

import azure.core.exceptions
from azure.storage.blob import (
    BlobSasPermissions,
    BlobServiceClient,
    ContainerClient,
    ContentSettings,
    UserDelegationKey,
    generate_blob_sas,
)

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
# Blobs per list request (the service maximum).
LIST_PAGE_SIZE = 5000
ACCOUNT_ENV, KEY_ENV = "AZURE_ACCOUNT_NAME", "AZURE_ACCOUNT_KEY"
CLIENT_ID_ENV, CLIENT_SECRET_ENV = "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET"
CONNECTION_ENV = "AZURE_STORAGE_CONNECTION_STRING"
# A user-delegation key is requested for this long and renewed with this much left.
DELEGATION_KEY_TTL = datetime.timedelta(days=1)
DELEGATION_KEY_MARGIN = datetime.timedelta(hours=1)
T = TypeVar("T")
log = logging.getLogger(__name__)


class SharedKeySigner:
    """Service SAS signed with the storage account's key."""

    def __init__(self, account: str, key: str) -> None:
        self.account, self._key = account, key

    def refresh(self, until: datetime.datetime | None = None) -> None:
        """Nothing to renew: the account key does not expire."""

    def sas(self, container: str, blob: str, expiry: datetime.datetime) -> str:
        return generate_blob_sas(self.account, container, blob, account_key=self._key,
                                 permission=BlobSasPermissions(read=True), expiry=expiry)


class DelegationSigner:
    """User-delegation SAS, signed with a delegation key fetched with Azure AD credentials."""

    def __init__(self, account: str, service: BlobServiceClient) -> None:
        self.account = account
        self._service = service
        self._key: UserDelegationKey | None = None
        self._key_expiry = datetime.datetime.min.replace(tzinfo=datetime.UTC)
        self._lock = threading.Lock()

    def refresh(self, until: datetime.datetime | None = None) -> UserDelegationKey:
        """The cached delegation key, renewed first if it expires before `until` (+margin)."""
        now = datetime.datetime.now(datetime.UTC)
        needed = max(until or now, now) + DELEGATION_KEY_MARGIN
        with self._lock:
            if self._key is None or self._key_expiry < needed:
                expiry = max(needed, now + DELEGATION_KEY_TTL)
                self._key = self._service.get_user_delegation_key(now, expiry)
                self._key_expiry = expiry
            return self._key

    def sas(self, container: str, blob: str, expiry: datetime.datetime) -> str:
        return generate_blob_sas(self.account, container, blob,
                                 user_delegation_key=self.refresh(expiry),
                                 permission=BlobSasPermissions(read=True), expiry=expiry)


Signer = SharedKeySigner | DelegationSigner


class AzureStore(FragmentStore):
    """Fragments stored as blobs under a name prefix of one Azure Blob container."""

    def __init__(self, url: StoreURL, container: str, prefix: str, service: BlobServiceClient,
                 signer: Signer) -> None:
        self.url = url.raw
        self.prefix = prefix
        self._rewrite = url.rewrite
        self._container: ContainerClient = service.get_container_client(container)
        self._signer = signer

    def name_of(self, fragment: pb.Fragment) -> str:
        """The blob name holding `fragment`."""
        return self.prefix + self._rewrite.apply(content_path(fragment))

    async def _run(self, what: str, fn: Callable[[], T]) -> T:
        try:
            return await asyncio.to_thread(fn)
        except (azure.core.exceptions.AzureError, OSError, ValueError) as exc:
            raise _store_error(f"{self._scheme} store {self.url!r}: {what}", exc) from exc

    @property
    def _scheme(self) -> str:
        return self.url.split(":", 1)[0]

    async def put(
        self, fragment: pb.Fragment, data: bytes, content_encoding: str | None = None
    ) -> None:
        name = self.name_of(fragment)
        # Content-Encoding lets an HTTP client decompress GZIP_OFFLOAD_DECOMPRESSION
        # fragments on the fly.
        settings = ContentSettings(content_type="application/octet-stream",
                                   content_encoding=content_encoding or None)
        await self._run(f"put {name}", lambda: self._container.upload_blob(
            name, data, overwrite=True, content_settings=settings))

    async def exists(self, fragment: pb.Fragment) -> bool:
        name = self.name_of(fragment)
        return await self._run(f"exists {name}",
                               lambda: bool(self._container.get_blob_client(name).exists()))

    async def list(self, journal: str) -> list[pb.Fragment]:
        prefix = self.prefix + self._rewrite.apply(journal + "/")
        objects = await self._run(f"list {prefix}", lambda: list(self._walk(prefix)))
        # Stores are re-listed every refresh interval: renew a delegation key here,
        # in a worker thread, so that sign_get (on the event loop) finds it fresh.
        # A failure is sign_get's to report (it retries); the listing stands.
        try:
            await self._run("renew the user delegation key", self._signer.refresh)
        except StoreError as exc:
            log.warning("%s", exc)
        return parse_listing(self.url, journal, objects)

    def _walk(self, prefix: str) -> Iterator[tuple[str, float]]:
        """(name relative to `prefix`, last-modified time) of every blob under `prefix`."""
        blobs = self._container.list_blobs(name_starts_with=prefix,
                                           results_per_page=LIST_PAGE_SIZE)
        for blob in blobs:
            yield blob.name[len(prefix):], blob.last_modified.timestamp()

    async def open(self, fragment: pb.Fragment) -> AsyncIterator[bytes]:
        name = self.name_of(fragment)
        # decompress=False: the stored bytes exactly as written, whatever their
        # Content-Encoding; the client fetches READ_CHUNK ranges.
        chunks = await self._run(f"open {name}", lambda: self._container.download_blob(
            name, decompress=False, max_concurrency=1).chunks())
        while chunk := await self._run(f"read {name}", lambda: next(chunks, b"")):
            yield chunk

    async def delete(self, fragment: pb.Fragment) -> None:
        name = self.name_of(fragment)
        # A missing blob is a 404 (BlobNotFound), which maps to StoreNotFoundError.
        await self._run(f"delete {name}", lambda: self._container.delete_blob(name))

    def sign_get(self, fragment: pb.Fragment, ttl_seconds: float) -> str:
        name = self.name_of(fragment)
        expiry = (datetime.datetime.now(datetime.UTC)
                  + datetime.timedelta(seconds=max(1, int(ttl_seconds))))
        try:
            sas = self._signer.sas(self._container.container_name, name, expiry)
        except (azure.core.exceptions.AzureError, ValueError) as exc:
            raise _store_error(f"{self._scheme} store {self.url!r}: sign {name}", exc
                               ) from exc
        blob_url = f"{self._container.url.rstrip('/')}/{quote(name, safe='/~')}"
        return f"{blob_url}?{sas}"


def _store_error(what: str, exc: BaseException) -> StoreError:
    """`exc` as the matching StoreError (401/403: permission; 404: not found)."""
    if isinstance(exc, azure.core.exceptions.HttpResponseError):
        # Storage errors carry the service's code (BlobNotFound, AuthorizationFailure...).
        code = getattr(exc, "error_code", None) or exc.status_code
        code = getattr(code, "value", code)  # StorageErrorCode members by their wire name
        detail = f"{what}: {code}: {_first_line(exc.message or str(exc))}"
        if exc.status_code in (401, 403):
            return StorePermissionError(detail)
        if exc.status_code == 404:
            return StoreNotFoundError(detail)
        return StoreError(detail)
    return StoreError(f"{what}: {exc}")


def _first_line(message: str) -> str:
    # Service messages go on with RequestId, Time and the raw XML error.
    return message.strip().splitlines()[0] if message.strip() else message


def parse_connection_string(text: str) -> dict[str, str]:
    """The `Key=Value;...` pairs of a storage connection string (values may contain '=')."""
    pairs = (part.split("=", 1) for part in text.split(";") if part.strip())
    return {key.strip(): value for key, value in (p for p in pairs if len(p) == 2)}


def _require_env(*names: str) -> list[str]:
    missing = [name for name in names if not os.environ.get(name)]
    if missing:
        raise ValidationError("store", f"{' and '.join(missing)} must be set")
    return [os.environ[name] for name in names]


def _service(account_url: str, credential: Any) -> BlobServiceClient:
    # Small single and chunk gets, so reads stream in READ_CHUNK pieces.
    return BlobServiceClient(account_url, credential=credential,
                             max_single_get_size=READ_CHUNK, max_chunk_get_size=READ_CHUNK)


def build_shared_key(url: StoreURL, file_root: str) -> AzureStore:
    """The registry's constructor for `azure://<container>/<prefix>/` URLs."""
    connection = os.environ.get(CONNECTION_ENV)
    if connection:
        parts = parse_connection_string(connection)
        account, key = parts.get("AccountName", ""), parts.get("AccountKey", "")
        if not account or not key:
            raise ValidationError("store", f"{CONNECTION_ENV} lacks AccountName or AccountKey")
        account_url = parts.get("BlobEndpoint") or (
            f"{parts.get('DefaultEndpointsProtocol', 'https')}://{account}.blob."
            f"{parts.get('EndpointSuffix', 'core.windows.net')}")
    else:
        account, key = _require_env(ACCOUNT_ENV, KEY_ENV)
        account_url = f"https://{account}.blob.core.windows.net"
    service = _service(account_url, {"account_name": account, "account_key": key})
    return AzureStore(url, url.host, url.prefix, service, SharedKeySigner(account, key))


def build_ad(url: StoreURL, file_root: str) -> AzureStore:
    """The registry's constructor for `azure-ad://<tenant>/<account>/<container>/<prefix>/`."""
    segments = url.prefix.split("/", 2)
    if len(segments) < 3 or not segments[0] or not segments[1]:
        raise ValidationError("store", f"store URL {url.raw!r} must be "
                              "azure-ad://<tenant-id>/<account>/<container>/<prefix>/")
    account, container, prefix = segments
    client_id, secret = _require_env(CLIENT_ID_ENV, CLIENT_SECRET_ENV)
    # Imported here: only azure-ad:// stores need the identity library.
    from azure.identity import ClientSecretCredential

    credential = ClientSecretCredential(url.host, client_id, secret)
    service = _service(f"https://{account}.blob.core.windows.net", credential)
    return AzureStore(url, container, prefix, service, DelegationSigner(account, service))


register_adapter("azure", StoreAdapter(build_shared_key))
register_adapter("azure-ad", StoreAdapter(build_ad))
