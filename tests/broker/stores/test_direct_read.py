"""Clients reading persisted fragments straight from their stores (do_not_proxy reads get a
fragment_url instead of content), and falling back to the broker when that fails."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from gazette_core.broker.client import direct
from gazette_core.broker.client.retry_reader import RetryReader
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.service import Broker
from gazette_core.broker.stores.s3 import S3Store
from gazette_core.testing.broker import journal_spec
from gazette_core.testing.s3 import S3Server
from tests.broker.support import append, create

PARTS = [bytes([65 + i]) * 700 + b"\n" for i in range(4)]
CONTENT = b"".join(PARTS)
# Four 701-byte appends over 1 KiB fragments roll at 701 and 2103; 2103-2804 stays spooled.
PERSISTED = [(0, 701), (701, 2103)]
CODECS = [pb.NONE, pb.GZIP, pb.GZIP_OFFLOAD_DECOMPRESSION, pb.ZSTANDARD, pb.SNAPPY]


@pytest.fixture
def fetched(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[int, int, str]]]:
    """(begin, end, URL scheme) of every fragment the client tried to fetch directly."""
    calls: list[tuple[int, int, str]] = []
    real = direct._open

    def spy(fragment: pb.Fragment, url: str, file_root: str | None) -> tuple[IO[bytes], bool]:
        calls.append((fragment.begin, fragment.end, url.split(":", 1)[0]))
        return real(fragment, url, file_root)

    monkeypatch.setattr(direct, "_open", spy)
    yield calls


async def fill(stub: pb_grpc.JournalStub, name: str, store: str, codec: int = pb.GZIP) -> None:
    """Append PARTS and wait until both rolled fragments are persisted and listed."""
    await create(stub, journal_spec(name, length=1024, codec=codec, stores=(store,)))
    for part in PARTS:
        await append(stub, name, part)
    for _ in range(400):
        resp = await stub.ListFragments(pb.FragmentsRequest(journal=name))
        if [(f.spec.begin, f.spec.end) for f in resp.fragments if f.spec.mod_time] == PERSISTED:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"fragments not persisted: {resp}")


async def read(stub: pb_grpc.JournalStub, name: str, offset: int = 0, end_offset: int = 0,
               file_root: str | None = None) -> bytes:
    request = pb.ReadRequest(journal=name, offset=offset, end_offset=end_offset,
                             do_not_proxy=True)
    async with RetryReader(stub, request, file_root=file_root) as reader:
        return b"".join([chunk async for chunk in reader])


@pytest.mark.parametrize("codec", CODECS, ids=[pb.CompressionCodec.Name(c) for c in CODECS])
async def test_persisted_fragments_are_read_from_s3(
        broker: Broker, stub: pb_grpc.JournalStub, s3: S3Server, codec: int,
        fetched: list[tuple[int, int, str]]) -> None:
    await fill(stub, "direct/s3", s3.store_url, codec)

    assert await read(stub, "direct/s3") == CONTENT
    # The spooled fragment (2103-2804) came through the broker.
    assert fetched == [(0, 701, "http"), (701, 2103, "http")]


async def test_reads_start_and_end_at_exact_offsets_inside_fragments(
        broker: Broker, stub: pb_grpc.JournalStub, s3: S3Server,
        fetched: list[tuple[int, int, str]]) -> None:
    await fill(stub, "direct/range", s3.store_url)

    assert await read(stub, "direct/range", offset=350) == CONTENT[350:]
    assert await read(stub, "direct/range", offset=350, end_offset=1000) == CONTENT[350:1000]
    assert await read(stub, "direct/range", offset=701, end_offset=702) == CONTENT[701:702]
    assert fetched == [(0, 701, "http"), (701, 2103, "http"), (0, 701, "http"),
                       (701, 2103, "http"), (701, 2103, "http")]


async def test_an_unreachable_url_falls_back_to_the_broker(
        broker: Broker, stub: pb_grpc.JournalStub, s3: S3Server,
        fetched: list[tuple[int, int, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    await fill(stub, "direct/unreachable", s3.store_url)
    # Port 1 on loopback refuses connections.
    monkeypatch.setattr(S3Store, "sign_get", lambda self, f, ttl: f"http://127.0.0.1:1/{f.end}")

    assert await read(stub, "direct/unreachable", offset=100) == CONTENT[100:]
    assert fetched == [(0, 701, "http"), (701, 2103, "http")]


async def test_a_failure_mid_fragment_resumes_through_the_broker_at_that_offset(
        broker: Broker, stub: pb_grpc.JournalStub, s3: S3Server,
        fetched: list[tuple[int, int, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    await fill(stub, "direct/cut", s3.store_url, pb.NONE)
    client = s3.client()
    for key in [o["Key"] for o in client.list_objects_v2(Bucket=s3.bucket)["Contents"]]:
        body = client.get_object(Bucket=s3.bucket, Key=key)["Body"].read()
        client.put_object(Bucket=s3.bucket, Key=f"cut/{key}", Body=body[:300])

    def sign_cut(self: S3Store, fragment: pb.Fragment, ttl: float) -> str:
        url: str = self._client.generate_presigned_url(
            "get_object", Params={"Bucket": self.bucket, "Key": f"cut/{self.key_of(fragment)}"},
            ExpiresIn=60)
        return url

    monkeypatch.setattr(S3Store, "sign_get", sign_cut)
    got: list[bytes] = []
    request = pb.ReadRequest(journal="direct/cut", do_not_proxy=True)
    async with RetryReader(stub, request) as reader:
        got.extend([chunk async for chunk in reader])

    assert b"".join(got) == CONTENT
    # 300 bytes of each fragment came from its (truncated) object, the rest from the broker.
    assert [len(chunk) for chunk in got[:2]] == [300, 401]
    assert fetched == [(0, 701, "http"), (701, 2103, "http")]


async def test_file_urls_are_read_below_the_clients_file_root(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path,
        fetched: list[tuple[int, int, str]]) -> None:
    await fill(stub, "direct/file", "file:///", pb.ZSTANDARD)

    assert await read(stub, "direct/file", offset=5, file_root=str(tmp_path)) == CONTENT[5:]
    assert fetched == [(0, 701, "file"), (701, 2103, "file")]
    # Without the root, file:// URLs are not readable here: the broker serves them.
    fetched.clear()
    assert await read(stub, "direct/file") == CONTENT
    assert fetched == [(0, 701, "file"), (701, 2103, "file")]


async def test_read_direct_rejects_content_ending_early(
        s3: S3Server, tmp_path: Path) -> None:
    fragment = pb.Fragment(journal="x/y", begin=10, end=20, compression_codec=pb.NONE,
                           backing_store="file:///", mod_time=1)
    (tmp_path / "obj").write_bytes(b"0123456")
    chunks: list[Any] = []
    with pytest.raises(direct.DirectReadError, match=r"direct read of 'x/y' \[10, 20\) failed: "
                                                     r"fragment .* ended at offset 17, "
                                                     r"expected 20"):
        async for chunk in direct.read_direct(fragment, "file:///obj", 12, str(tmp_path)):
            chunks.append(chunk)
    assert chunks == [b"23456"]
