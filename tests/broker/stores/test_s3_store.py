"""S3 store against a moto server on loopback: keys, listing, streaming, deletes, signing
and the store URL's query parameters."""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.fragment_ext import sum_from_hex
from gazette_core.broker.stores import s3 as s3_module
from gazette_core.broker.stores.base import (
    FragmentStore,
    StoreNotFoundError,
    StorePermissionError,
    UnusableStore,
)
from gazette_core.broker.stores.registry import get_store
from gazette_core.broker.stores.s3 import S3Store
from gazette_core.testing.s3 import S3Server, s3_store_url

SUM = "0000000000002694000000000000000000000000"
NAME = f"00000000000003e8-00000000000005dc-{SUM}.sz"


def _fragment(journal: str = "my/journal", codec: int = pb.SNAPPY, postfix: str = "",
              begin: int = 1000, end: int = 1500) -> pb.Fragment:
    return pb.Fragment(journal=journal, begin=begin, end=end, sum=sum_from_hex(SUM),
                       compression_codec=codec, path_postfix=postfix)


def _store(url: str) -> S3Store:
    store = get_store(url, "/unused")
    assert isinstance(store, S3Store), getattr(store, "reason", store)
    return store


async def _read(store: FragmentStore, fragment: pb.Fragment) -> bytes:
    return b"".join([chunk async for chunk in store.open(fragment)])


def _keys(s3: S3Server) -> list[str]:
    listed = s3.client().list_objects_v2(Bucket=s3.bucket)
    return sorted(obj["Key"] for obj in listed.get("Contents", ()))


async def test_put_writes_content_addressed_keys_under_the_prefix(s3: S3Server) -> None:
    store = _store(s3.store_url)
    await store.put(_fragment(), b"compressed bytes")
    await store.put(_fragment(codec=pb.GZIP_OFFLOAD_DECOMPRESSION, postfix="date=2019"), b"gz",
                    "gzip")

    assert _keys(s3) == [
        f"fragments/my/journal/{NAME}",
        f"fragments/my/journal/date=2019/00000000000003e8-00000000000005dc-{SUM}",
    ]
    client = s3.client()
    plain = client.get_object(Bucket=s3.bucket, Key=f"fragments/my/journal/{NAME}")
    assert plain["Body"].read() == b"compressed bytes"
    assert "ContentEncoding" not in plain
    offload = client.head_object(
        Bucket=s3.bucket, Key=f"fragments/my/journal/date=2019/{NAME.removesuffix('.sz')}")
    assert offload["ContentEncoding"] == "gzip"
    assert await store.exists(_fragment())
    assert not await store.exists(_fragment(journal="other/journal"))


async def test_a_bucket_root_store_has_no_key_prefix(s3: S3Server) -> None:
    store = _store(s3_store_url(s3.bucket, "", s3.endpoint))
    await store.put(_fragment(), b"x")
    assert _keys(s3) == [f"my/journal/{NAME}"]


async def test_list_parses_keys_sets_store_and_mod_time_and_skips_junk(s3: S3Server) -> None:
    store = _store(s3.store_url)
    await store.put(_fragment(begin=1500, end=2000), b"b")
    await store.put(_fragment(), b"a")
    await store.put(_fragment(postfix="date=2019/hour=22"), b"c")
    s3.client().put_object(Bucket=s3.bucket, Key="fragments/my/journal/README", Body=b"junk")
    s3.client().put_object(Bucket=s3.bucket, Key=f"fragments/my/other/{NAME}", Body=b"o")

    listed = await store.list("my/journal")

    assert [(f.journal, f.begin, f.end, f.path_postfix, f.compression_codec, f.backing_store)
            for f in listed] == [
        ("my/journal", 1000, 1500, "", pb.SNAPPY, s3.store_url),
        ("my/journal", 1000, 1500, "date=2019/hour=22", pb.SNAPPY, s3.store_url),
        ("my/journal", 1500, 2000, "", pb.SNAPPY, s3.store_url),
    ]
    head = s3.client().head_object(Bucket=s3.bucket, Key=f"fragments/my/journal/{NAME}")
    assert listed[0].mod_time == int(head["LastModified"].timestamp())
    assert await store.list("no/such/journal") == []


async def test_list_follows_every_page(s3: S3Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(s3_module, "LIST_PAGE_SIZE", 2)
    store = _store(s3.store_url)
    for i in range(5):
        await store.put(_fragment(begin=i * 10, end=i * 10 + 10), b"x")

    listed = await store.list("my/journal")

    assert [(f.begin, f.end) for f in listed] == [(0, 10), (10, 20), (20, 30), (30, 40),
                                                  (40, 50)]


async def test_open_streams_large_objects_in_chunks(s3: S3Server) -> None:
    store = _store(s3.store_url)
    data = os.urandom(2 * s3_module.READ_CHUNK + 12345)
    fragment = _fragment(codec=pb.GZIP)  # A ".gz" key is returned as stored, not gunzipped.
    await store.put(fragment, data)

    chunks = [chunk async for chunk in store.open(fragment)]

    assert b"".join(chunks) == data
    assert len(chunks) == 3
    assert max(len(c) for c in chunks) == s3_module.READ_CHUNK


async def test_open_of_a_missing_object_raises_not_found(s3: S3Server) -> None:
    store = _store(s3.store_url)
    with pytest.raises(StoreNotFoundError, match=r"fragments/my/journal/"):
        await _read(store, _fragment())


async def test_delete_removes_and_reports_a_missing_object(s3: S3Server) -> None:
    store = _store(s3.store_url)
    await store.put(_fragment(), b"a")
    await store.delete(_fragment())
    assert _keys(s3) == []
    with pytest.raises(StoreNotFoundError, match=f"delete fragments/my/journal/{NAME}"):
        await store.delete(_fragment())


async def test_delete_refused_by_a_bucket_policy_is_a_permission_error(s3: S3Server) -> None:
    store = _store(s3.store_url)
    await store.put(_fragment(), b"a")
    s3.client().put_bucket_policy(Bucket=s3.bucket, Policy=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Deny", "Principal": "*", "Action": "s3:DeleteObject",
                       "Resource": f"arn:aws:s3:::{s3.bucket}/fragments/*"}]}))

    with pytest.raises(StorePermissionError, match=f"delete fragments/my/journal/{NAME}"):
        await store.delete(_fragment())
    assert _keys(s3) == [f"fragments/my/journal/{NAME}"]


async def test_sign_get_is_a_path_style_url_on_the_endpoint(s3: S3Server) -> None:
    store = _store(s3.store_url)
    await store.put(_fragment(), b"signed content")

    url = store.sign_get(_fragment(), 60)

    assert url.startswith(f"{s3.endpoint}/{s3.bucket}/fragments/my/journal/{NAME}?")
    assert "X-Amz-Expires=60" in url
    with urllib.request.urlopen(url, timeout=10) as resp:
        assert resp.read() == b"signed content"


async def test_find_replace_rewrites_keys(s3: S3Server) -> None:
    store = _store(s3.store_url + "&find=my/&replace=renamed/")
    await store.put(_fragment(), b"a")
    assert _keys(s3) == [f"fragments/renamed/journal/{NAME}"]
    assert [f.journal for f in await store.list("my/journal")] == ["my/journal"]
    assert await _read(store, _fragment()) == b"a"


async def test_region_parameter_sets_the_client_region(s3: S3Server) -> None:
    store = _store(s3.store_url + "&region=eu-west-1")
    assert store._client.meta.region_name == "eu-west-1"
    assert "%2Feu-west-1%2Fs3%2Faws4_request" in store.sign_get(_fragment(), 60)


async def test_put_parameters_reach_the_object(s3: S3Server) -> None:
    store = _store(s3.store_url + "&storageclass=STANDARD_IA&sse=AES256&acl=public-read")
    await store.put(_fragment(), b"a")

    key = f"fragments/my/journal/{NAME}"
    head = s3.client().head_object(Bucket=s3.bucket, Key=key)
    assert (head["StorageClass"], head["ServerSideEncryption"]) == ("STANDARD_IA", "AES256")
    grants = s3.client().get_object_acl(Bucket=s3.bucket, Key=key)["Grants"]
    assert {"Type": "Group", "URI": "http://acs.amazonaws.com/groups/global/AllUsers"} in [
        g["Grantee"] for g in grants if g["Permission"] == "READ"]


async def test_kms_key_parameter_reaches_the_object(s3: S3Server) -> None:
    store = _store(s3.store_url + "&sse=aws:kms&ssekmskeyid=my-key-id")
    await store.put(_fragment(), b"a")
    head = s3.client().head_object(Bucket=s3.bucket, Key=f"fragments/my/journal/{NAME}")
    assert head["ServerSideEncryption"] == "aws:kms"
    assert head["SSEKMSKeyId"].endswith("my-key-id")


async def test_unknown_parameter_makes_the_store_unusable(s3: S3Server) -> None:
    url = s3.store_url + "&bogus=1"
    store = get_store(url, "/unused")
    assert isinstance(store, UnusableStore)
    assert store.reason == f"unknown query parameter 'bogus' in store URL {url!r}"


async def test_profile_parameter_reads_the_shared_credentials(
        s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    credentials = tmp_path / "credentials"
    credentials.write_text("[ci]\naws_access_key_id = from-profile\n"
                           "aws_secret_access_key = secret\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))

    store = _store(s3.store_url + "&profile=ci")
    await store.put(_fragment(), b"a")
    assert "from-profile%2F" in store.sign_get(_fragment(), 60)

    missing = get_store(s3.store_url + "&profile=nope", "/unused")
    assert isinstance(missing, UnusableStore)
    assert missing.reason == ("cannot load AWS profile: The config profile (nope) "
                              "could not be found")
