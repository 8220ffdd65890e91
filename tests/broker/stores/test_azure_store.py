"""Azure stores against Azurite on loopback: blob names, listing, streaming, deletes, SAS
signing, refused credentials, the URL forms and parameters, and a broker persisting there.
`azure-ad://` needs Azure AD, so its tests stop short of the service."""

from __future__ import annotations

import base64
import datetime
import gzip
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from azure.storage.blob import BlobServiceClient, UserDelegationKey

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.protocol.fragment_ext import content_path, sum_from_hex
from gazette_core.broker.service import Broker
from gazette_core.broker.stores import azure as azure_module
from gazette_core.broker.stores.azure import AzureStore, DelegationSigner
from gazette_core.broker.stores.base import (
    FragmentStore,
    StoreNotFoundError,
    StorePermissionError,
    UnusableStore,
)
from gazette_core.broker.stores.registry import get_store
from gazette_core.broker.stores.url import parse_store_url
from gazette_core.testing.azure import (
    ACCOUNT,
    ACCOUNT_KEY,
    AzuriteServer,
    azurite,
    connection_string,
    new_container,
)
from gazette_core.testing.broker import journal_spec
from tests.broker.stores.test_s3_broker import PARTS, expected, persisted
from tests.broker.support import append, content, create, read_all

SUM = "0000000000002694000000000000000000000000"
NAME = f"00000000000003e8-00000000000005dc-{SUM}.sz"


@pytest.fixture(scope="module")
def azurite_endpoint() -> Iterator[str]:
    with azurite() as endpoint:
        yield endpoint


@pytest.fixture
def az(azurite_endpoint: str) -> AzuriteServer:
    """A new container on the module's Azurite; its store URL has prefix `fragments/`."""
    return new_container(azurite_endpoint)


def _fragment(journal: str = "my/journal", codec: int = pb.SNAPPY, postfix: str = "",
              begin: int = 1000, end: int = 1500) -> pb.Fragment:
    return pb.Fragment(journal=journal, begin=begin, end=end, sum=sum_from_hex(SUM),
                       compression_codec=codec, path_postfix=postfix)


def _store(url: str) -> AzureStore:
    store = get_store(url, "/unused")
    assert isinstance(store, AzureStore), getattr(store, "reason", store)
    return store


async def _read(store: FragmentStore, fragment: pb.Fragment) -> bytes:
    return b"".join([chunk async for chunk in store.open(fragment)])


def _names(az: AzuriteServer) -> list[str]:
    return sorted(blob.name for blob in az.client().list_blobs())


def _stored(az: AzuriteServer, name: str) -> bytes:
    """The blob `name`, fetched with the plain SDK exactly as stored."""
    data: bytes = az.client().download_blob(name, decompress=False).readall()
    return data


async def test_put_writes_content_addressed_names_under_the_prefix(az: AzuriteServer) -> None:
    store = _store(az.store_url)
    await store.put(_fragment(), b"compressed bytes")
    await store.put(_fragment(codec=pb.GZIP_OFFLOAD_DECOMPRESSION, postfix="date=2019"), b"gz",
                    "gzip")

    offload = f"fragments/my/journal/date=2019/{NAME.removesuffix('.sz')}"
    assert _names(az) == [f"fragments/my/journal/{NAME}", offload]
    assert _stored(az, f"fragments/my/journal/{NAME}") == b"compressed bytes"
    plain = az.client().get_blob_client(f"fragments/my/journal/{NAME}").get_blob_properties()
    assert plain.content_settings.content_encoding is None
    props = az.client().get_blob_client(offload).get_blob_properties()
    assert props.content_settings.content_encoding == "gzip"
    assert await store.exists(_fragment())
    assert not await store.exists(_fragment(journal="other/journal"))


async def test_a_container_root_store_has_no_name_prefix(az: AzuriteServer) -> None:
    store = _store(f"azure://{az.container}/")
    await store.put(_fragment(), b"x")
    assert _names(az) == [f"my/journal/{NAME}"]


async def test_list_parses_names_sets_store_and_mod_time_and_skips_junk(
        az: AzuriteServer) -> None:
    store = _store(az.store_url)
    await store.put(_fragment(begin=1500, end=2000), b"b")
    await store.put(_fragment(), b"a")
    await store.put(_fragment(postfix="date=2019/hour=22"), b"c")
    az.client().upload_blob("fragments/my/journal/README", b"junk")
    az.client().upload_blob(f"fragments/my/other/{NAME}", b"o")

    listed = await store.list("my/journal")

    assert [(f.journal, f.begin, f.end, f.path_postfix, f.compression_codec, f.backing_store)
            for f in listed] == [
        ("my/journal", 1000, 1500, "", pb.SNAPPY, az.store_url),
        ("my/journal", 1000, 1500, "date=2019/hour=22", pb.SNAPPY, az.store_url),
        ("my/journal", 1500, 2000, "", pb.SNAPPY, az.store_url),
    ]
    props = az.client().get_blob_client(f"fragments/my/journal/{NAME}").get_blob_properties()
    assert listed[0].mod_time == int(props.last_modified.timestamp())
    assert await store.list("no/such/journal") == []


async def test_list_follows_every_page(az: AzuriteServer,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(azure_module, "LIST_PAGE_SIZE", 2)
    store = _store(az.store_url)
    for i in range(5):
        await store.put(_fragment(begin=i * 10, end=i * 10 + 10), b"x")

    listed = await store.list("my/journal")

    assert [(f.begin, f.end) for f in listed] == [(0, 10), (10, 20), (20, 30), (30, 40),
                                                  (40, 50)]


async def test_open_streams_large_objects_in_chunks(az: AzuriteServer) -> None:
    store = _store(az.store_url)
    data = os.urandom(2 * azure_module.READ_CHUNK + 12345)
    fragment = _fragment(codec=pb.GZIP_OFFLOAD_DECOMPRESSION)
    await store.put(fragment, data, "gzip")  # Returned as stored, not decoded.

    chunks = [chunk async for chunk in store.open(fragment)]

    assert b"".join(chunks) == data
    assert len(chunks) == 3
    assert max(len(c) for c in chunks) == azure_module.READ_CHUNK


async def test_open_of_a_missing_object_raises_not_found(az: AzuriteServer) -> None:
    store = _store(az.store_url)
    with pytest.raises(StoreNotFoundError, match=f"open fragments/my/journal/{NAME}: "
                                                 "BlobNotFound: The specified blob does not"):
        await _read(store, _fragment())


async def test_delete_removes_and_reports_a_missing_object(az: AzuriteServer) -> None:
    store = _store(az.store_url)
    await store.put(_fragment(), b"a")
    await store.delete(_fragment())
    assert _names(az) == []
    with pytest.raises(StoreNotFoundError, match=f"delete fragments/my/journal/{NAME}: "
                                                 "BlobNotFound"):
        await store.delete(_fragment())


async def test_a_wrong_account_key_is_a_permission_error(
        az: AzuriteServer, monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = base64.b64encode(b"not the key").decode()
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING",
                       connection_string(az.endpoint).replace(ACCOUNT_KEY, wrong))
    store = _store(az.store_url + "?find=wrong-key&replace=wrong-key")  # a fresh store

    with pytest.raises(StorePermissionError, match=f"put fragments/my/journal/{NAME}: "
                                                   "AuthorizationFailure"):
        await store.put(_fragment(), b"a")
    assert _names(az) == []


async def test_sign_get_is_a_read_only_sas_url_on_the_blob(az: AzuriteServer) -> None:
    store = _store(az.store_url)
    await store.put(_fragment(postfix="a b"), b"signed content")

    url = store.sign_get(_fragment(postfix="a b"), 60)

    blob_url = f"{az.endpoint}/{az.container}/fragments/my/journal/a%20b/{NAME}"
    assert url.startswith(f"{blob_url}?")
    assert "sp=r&" in url and "sr=b&" in url and "&sig=" in url
    with urllib.request.urlopen(url, timeout=10) as resp:
        assert resp.read() == b"signed content"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(blob_url, timeout=10)  # No SAS, no access.
    assert refused.value.code in (401, 403, 404)


async def test_find_replace_rewrites_names(az: AzuriteServer) -> None:
    store = _store(az.store_url + "?find=my/&replace=renamed/")
    await store.put(_fragment(), b"a")
    assert _names(az) == [f"fragments/renamed/journal/{NAME}"]
    assert [f.journal for f in await store.list("my/journal")] == ["my/journal"]
    assert await _read(store, _fragment()) == b"a"


async def test_unknown_parameter_makes_the_store_unusable(az: AzuriteServer) -> None:
    url = az.store_url + "?endpoint=x"
    store = get_store(url, "/unused")
    assert isinstance(store, UnusableStore)
    assert store.reason == f"unknown query parameter 'endpoint' in store URL {url!r}"


async def test_shared_key_credentials_come_from_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_STORAGE_CONNECTION_STRING")
    missing = get_store("azure://no-env/fragments/", "/unused")
    assert isinstance(missing, UnusableStore)
    assert missing.reason == "AZURE_ACCOUNT_NAME and AZURE_ACCOUNT_KEY must be set"

    monkeypatch.setenv("AZURE_ACCOUNT_NAME", "myaccount")
    monkeypatch.setenv("AZURE_ACCOUNT_KEY", base64.b64encode(b"key").decode())
    store = _store("azure://with-env/fragments/")
    assert store.sign_get(_fragment(), 60).startswith(
        f"https://myaccount.blob.core.windows.net/with-env/fragments/my/journal/{NAME}?")


async def test_azure_ad_urls_name_tenant_account_container_and_prefix(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_CLIENT_ID", raising=False)
    monkeypatch.delenv("AZURE_CLIENT_SECRET", raising=False)
    no_env = get_store("azure-ad://tenant-1/acct/cont/no-env/", "/unused")
    assert isinstance(no_env, UnusableStore)
    assert no_env.reason == "AZURE_CLIENT_ID and AZURE_CLIENT_SECRET must be set"

    monkeypatch.setenv("AZURE_CLIENT_ID", "client")
    monkeypatch.setenv("AZURE_CLIENT_SECRET", "secret")
    # Building a store makes no request: the token is fetched on first use.
    store = _store("azure-ad://tenant-1/acct/cont/pre/fix/")
    assert (store._container.url, store.prefix) == (
        "https://acct.blob.core.windows.net/cont", "pre/fix/")
    assert store.name_of(_fragment()) == f"pre/fix/my/journal/{NAME}"
    short = "azure-ad://tenant-1/acct/"
    no_container = get_store(short, "/unused")
    assert isinstance(no_container, UnusableStore)
    assert no_container.reason == (f"store URL {short!r} must be "
                                   "azure-ad://<tenant-id>/<account>/<container>/<prefix>/")


class FakeDelegationService:
    """Hands out user-delegation keys as the service would, counting requests."""

    def __init__(self) -> None:
        self.requests: list[tuple[datetime.datetime, datetime.datetime]] = []

    def get_user_delegation_key(self, start: datetime.datetime, expiry: datetime.datetime
                                ) -> UserDelegationKey:
        self.requests.append((start, expiry))
        key = UserDelegationKey()
        key.signed_oid, key.signed_tid = "object-id", "tenant-1"
        key.signed_start = start.strftime("%Y-%m-%dT%H:%M:%SZ")
        key.signed_expiry = expiry.strftime("%Y-%m-%dT%H:%M:%SZ")
        key.signed_service, key.signed_version = "b", "2025-01-05"
        key.value = base64.b64encode(b"delegation key").decode()
        return key


def test_user_delegation_sas_reuses_its_key_until_it_nears_expiry() -> None:
    service: Any = FakeDelegationService()
    signer = DelegationSigner("acct", service)
    now = datetime.datetime.now(datetime.UTC)

    first = signer.sas("cont", "a/b", now + datetime.timedelta(minutes=1))
    signer.sas("cont", "a/c", now + datetime.timedelta(hours=2))
    assert len(service.requests) == 1
    assert service.requests[0][1] - service.requests[0][0] >= azure_module.DELEGATION_KEY_TTL
    assert "skoid=object-id" in first and "sktid=tenant-1" in first and "sp=r" in first

    signer.sas("cont", "a/d", now + datetime.timedelta(days=2))  # Past the cached key.
    assert len(service.requests) == 2
    assert service.requests[1][1] >= now + datetime.timedelta(days=2)


async def test_a_refused_delegation_key_fails_signing_but_not_listing(
        az: AzuriteServer) -> None:
    # Azurite grants delegation keys to OAuth callers only, so a shared-key client is refused.
    url = parse_store_url(az.store_url)
    service = BlobServiceClient.from_connection_string(connection_string(az.endpoint))
    store = AzureStore(url, az.container, url.prefix, service, DelegationSigner(ACCOUNT, service))
    await store.put(_fragment(), b"a")

    assert [f.end for f in await store.list("my/journal")] == [1500]
    with pytest.raises(StorePermissionError, match=f"sign fragments/my/journal/{NAME}: "):
        store.sign_get(_fragment(), 60)


@pytest.mark.parametrize("codec", [pb.GZIP, pb.SNAPPY], ids=["GZIP", "SNAPPY"])
async def test_a_broker_persists_fragments_to_azure_and_reads_them_back(
        broker: Broker, stub: pb_grpc.JournalStub, az: AzuriteServer, codec: int) -> None:
    name = f"azure/journal-{codec}"
    await create(stub, journal_spec(name, length=1024, codec=codec, stores=(az.store_url,)))
    for part in PARTS:
        await append(stub, name, part)
    fragments = await persisted(stub, name)

    assert [(f.backing_store, f.compression_codec) for f in fragments] == [
        (az.store_url, codec)] * 2
    assert _names(az)[-2:] == [f"fragments/{content_path(f)}" for f in fragments]
    if codec == pb.GZIP:
        assert [gzip.decompress(_stored(az, f"fragments/{content_path(f)}"))
                for f in fragments] == [expected(f) for f in fragments]
    out = await read_all(stub, pb.ReadRequest(journal=name, offset=350))
    assert [(r.offset, r.fragment.backing_store) for r in out if not r.content][:2] == [
        (350, az.store_url), (701, az.store_url)]
    assert [r.fragment_url.startswith(f"{az.endpoint}/{az.container}/fragments/{name}/")
            for r in out if not r.content][:2] == [True, True]
    assert b"".join(r.content for r in out) == b"".join(PARTS)[350:]
    assert await content(stub, name) == b"".join(PARTS)
