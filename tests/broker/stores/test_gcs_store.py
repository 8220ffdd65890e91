"""GCS store against gcp-storage-emulator on loopback: object names, listing, streaming,
deletes, signing, the URL's query parameters, and a broker persisting journals there."""

from __future__ import annotations

import gzip
import json
import os
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import google.api_core.exceptions
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.protocol.fragment_ext import content_path, sum_from_hex
from gazette_core.broker.service import Broker
from gazette_core.broker.stores import gcs as gcs_module
from gazette_core.broker.stores.base import (
    FragmentStore,
    StoreError,
    StoreNotFoundError,
    StorePermissionError,
    UnusableStore,
)
from gazette_core.broker.stores.gcs import GCSStore
from gazette_core.broker.stores.registry import get_store
from gazette_core.testing.broker import journal_spec
from gazette_core.testing.gcs import GCSServer, gcs_emulator, new_bucket
from tests.broker.stores.test_s3_broker import PARTS, expected, persisted
from tests.broker.support import append, content, create, read_all

SUM = "0000000000002694000000000000000000000000"
NAME = f"00000000000003e8-00000000000005dc-{SUM}.sz"


@pytest.fixture(scope="module")
def gcs_endpoint() -> Iterator[str]:
    with gcs_emulator() as endpoint:
        yield endpoint


@pytest.fixture
def gcs(gcs_endpoint: str) -> GCSServer:
    """A new bucket on the module's emulator; its store URL has prefix `fragments/`."""
    return new_bucket(gcs_endpoint)


def _fragment(journal: str = "my/journal", codec: int = pb.SNAPPY, postfix: str = "",
              begin: int = 1000, end: int = 1500) -> pb.Fragment:
    return pb.Fragment(journal=journal, begin=begin, end=end, sum=sum_from_hex(SUM),
                       compression_codec=codec, path_postfix=postfix)


def _store(url: str) -> GCSStore:
    store = get_store(url, "/unused")
    assert isinstance(store, GCSStore), getattr(store, "reason", store)
    return store


async def _read(store: FragmentStore, fragment: pb.Fragment) -> bytes:
    return b"".join([chunk async for chunk in store.open(fragment)])


def _names(gcs: GCSServer) -> list[str]:
    return sorted(blob.name for blob in gcs.client().list_blobs(gcs.bucket))


def _stored(gcs: GCSServer, name: str) -> bytes:
    """The object `name`, fetched with the plain SDK (as stored, never transcoded)."""
    blob = gcs.client().bucket(gcs.bucket).blob(name)
    data: bytes = blob.download_as_bytes(raw_download=True)
    return data


async def test_put_writes_content_addressed_names_under_the_prefix(gcs: GCSServer) -> None:
    store = _store(gcs.store_url)
    await store.put(_fragment(), b"compressed bytes")
    await store.put(_fragment(codec=pb.GZIP_OFFLOAD_DECOMPRESSION, postfix="date=2019"), b"gz",
                    "gzip")

    offload = f"fragments/my/journal/date=2019/{NAME.removesuffix('.sz')}"
    assert _names(gcs) == [f"fragments/my/journal/{NAME}", offload]
    assert _stored(gcs, f"fragments/my/journal/{NAME}") == b"compressed bytes"
    bucket = gcs.client().bucket(gcs.bucket)
    assert bucket.get_blob(f"fragments/my/journal/{NAME}").content_encoding is None
    assert bucket.get_blob(offload).content_encoding == "gzip"
    assert await store.exists(_fragment())
    assert not await store.exists(_fragment(journal="other/journal"))


async def test_a_bucket_root_store_has_no_name_prefix(gcs: GCSServer) -> None:
    store = _store(f"gs://{gcs.bucket}/")
    await store.put(_fragment(), b"x")
    assert _names(gcs) == [f"my/journal/{NAME}"]


async def test_list_parses_names_sets_store_and_mod_time_and_skips_junk(
        gcs: GCSServer) -> None:
    store = _store(gcs.store_url)
    await store.put(_fragment(begin=1500, end=2000), b"b")
    await store.put(_fragment(), b"a")
    await store.put(_fragment(postfix="date=2019/hour=22"), b"c")
    bucket = gcs.client().bucket(gcs.bucket)
    bucket.blob("fragments/my/journal/README").upload_from_string(b"junk")
    bucket.blob(f"fragments/my/other/{NAME}").upload_from_string(b"o")

    listed = await store.list("my/journal")

    assert [(f.journal, f.begin, f.end, f.path_postfix, f.compression_codec, f.backing_store)
            for f in listed] == [
        ("my/journal", 1000, 1500, "", pb.SNAPPY, gcs.store_url),
        ("my/journal", 1000, 1500, "date=2019/hour=22", pb.SNAPPY, gcs.store_url),
        ("my/journal", 1500, 2000, "", pb.SNAPPY, gcs.store_url),
    ]
    updated = bucket.get_blob(f"fragments/my/journal/{NAME}").updated
    assert listed[0].mod_time == int(updated.timestamp())
    assert await store.list("no/such/journal") == []


async def test_open_streams_large_objects_in_chunks(gcs: GCSServer) -> None:
    store = _store(gcs.store_url)
    data = os.urandom(2 * gcs_module.READ_CHUNK + 12345)
    fragment = _fragment(codec=pb.GZIP_OFFLOAD_DECOMPRESSION)
    await store.put(fragment, data, "gzip")  # Returned as stored, not transcoded.

    chunks = [chunk async for chunk in store.open(fragment)]

    assert b"".join(chunks) == data
    assert len(chunks) == 3
    assert max(len(c) for c in chunks) == gcs_module.READ_CHUNK


async def test_open_of_a_missing_object_raises_not_found(gcs: GCSServer) -> None:
    store = _store(gcs.store_url)
    with pytest.raises(StoreNotFoundError, match=f"read fragments/my/journal/{NAME}"):
        await _read(store, _fragment())


async def test_delete_removes_and_reports_a_missing_object(gcs: GCSServer) -> None:
    store = _store(gcs.store_url)
    await store.put(_fragment(), b"a")
    await store.delete(_fragment())
    assert _names(gcs) == []
    with pytest.raises(StoreNotFoundError, match=f"delete fragments/my/journal/{NAME}"):
        await store.delete(_fragment())


def test_refusals_map_to_permission_errors() -> None:
    denied = gcs_module._store_error("delete x", google.api_core.exceptions.Forbidden("no"))
    assert isinstance(denied, StorePermissionError)
    assert str(denied) == "delete x: no"
    unauthenticated = gcs_module._store_error(
        "put x", google.api_core.exceptions.Unauthorized("who?"))
    assert isinstance(unauthenticated, StorePermissionError)


async def test_sign_get_without_a_key_is_the_emulator_download_url(gcs: GCSServer) -> None:
    store = _store(gcs.store_url)
    await store.put(_fragment(postfix="a b"), b"signed content")

    url = store.sign_get(_fragment(postfix="a b"), 60)

    assert url == f"{gcs.endpoint}/{gcs.bucket}/fragments/my/journal/a%20b/{NAME}"
    with urllib.request.urlopen(url, timeout=10) as resp:
        assert resp.read() == b"signed content"


def _service_account_key(path: Path) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption())
    path.write_text(json.dumps({
        "type": "service_account", "project_id": "gazette-test", "private_key_id": "1",
        "private_key": key.decode(), "client_email": "broker@gazette-test.iam.example",
        "token_uri": "http://127.0.0.1:9/token"}))


async def test_sign_get_with_a_service_account_key_is_a_v4_signed_url(
        gcs: GCSServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _service_account_key(tmp_path / "key.json")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "key.json"))
    store = _store(gcs.store_url)
    await store.put(_fragment(), b"signed content")

    url = store.sign_get(_fragment(), 60)

    assert url.startswith(f"{gcs.endpoint}/{gcs.bucket}/fragments/my/journal/{NAME}?")
    assert "X-Goog-Algorithm=GOOG4-RSA-SHA256" in url
    assert "X-Goog-Expires=60&" in url
    assert "X-Goog-Credential=broker%40gazette-test.iam.example%2F" in url
    with urllib.request.urlopen(url, timeout=10) as resp:
        assert resp.read() == b"signed content"


async def test_sign_get_without_a_key_or_emulator_says_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Authorized-user credentials load from the file without any network call.
    (tmp_path / "user.json").write_text(json.dumps({
        "type": "authorized_user", "client_id": "c", "client_secret": "s",
        "refresh_token": "r"}))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "user.json"))
    monkeypatch.delenv("STORAGE_EMULATOR_HOST")
    store = _store("gs://unsigned-bucket/fragments/")

    with pytest.raises(StoreError) as err:
        store.sign_get(_fragment(), 60)
    assert str(err.value) == (
        f"gs store 'gs://unsigned-bucket/fragments/': sign fragments/my/journal/{NAME}: "
        "the application default credentials hold no service-account key, which signed "
        "URLs need")


async def test_find_replace_rewrites_names(gcs: GCSServer) -> None:
    store = _store(gcs.store_url + "?find=my/&replace=renamed/")
    await store.put(_fragment(), b"a")
    assert _names(gcs) == [f"fragments/renamed/journal/{NAME}"]
    assert [f.journal for f in await store.list("my/journal")] == ["my/journal"]
    assert await _read(store, _fragment()) == b"a"


async def test_unknown_parameter_makes_the_store_unusable(gcs: GCSServer) -> None:
    url = gcs.store_url + "?endpoint=http%3A%2F%2F127.0.0.1%3A1"
    store = get_store(url, "/unused")
    assert isinstance(store, UnusableStore)
    assert store.reason == f"unknown query parameter 'endpoint' in store URL {url!r}"


@pytest.mark.parametrize("codec", [pb.GZIP, pb.SNAPPY], ids=["GZIP", "SNAPPY"])
async def test_a_broker_persists_fragments_to_gcs_and_reads_them_back(
        broker: Broker, stub: pb_grpc.JournalStub, gcs: GCSServer, codec: int) -> None:
    name = f"gcs/journal-{codec}"
    await create(stub, journal_spec(name, length=1024, codec=codec, stores=(gcs.store_url,)))
    for part in PARTS:
        await append(stub, name, part)
    fragments = await persisted(stub, name)

    assert [(f.backing_store, f.compression_codec) for f in fragments] == [
        (gcs.store_url, codec)] * 2
    assert _names(gcs)[-2:] == [f"fragments/{content_path(f)}" for f in fragments]
    if codec == pb.GZIP:
        assert [gzip.decompress(_stored(gcs, f"fragments/{content_path(f)}"))
                for f in fragments] == [expected(f) for f in fragments]
    out = await read_all(stub, pb.ReadRequest(journal=name, offset=350))
    assert [(r.offset, r.fragment.backing_store) for r in out if not r.content][:2] == [
        (350, gcs.store_url), (701, gcs.store_url)]
    assert [r.fragment_url.startswith(f"{gcs.endpoint}/{gcs.bucket}/fragments/{name}/")
            for r in out if not r.content][:2] == [True, True]
    assert b"".join(r.content for r in out) == b"".join(PARTS)[350:]
    assert await content(stub, name) == b"".join(PARTS)
