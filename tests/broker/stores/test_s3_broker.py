"""An in-process broker persisting to S3 (moto on loopback): listing, reading back through
the broker, and the stored objects decoded by plain boto3 plus gzip, `gunzip` and `zstd`."""

from __future__ import annotations

import asyncio
import gzip
import subprocess
import time

import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.protocol.fragment_ext import content_name, content_path
from gazette_core.broker.service import Broker
from gazette_core.testing.broker import journal_spec
from gazette_core.testing.s3 import S3Server
from tests.broker.support import append, content, create, read_all

PARTS = [bytes([65 + i]) * 700 + b"\n" for i in range(4)]
# Four 701-byte appends over 1 KiB fragments roll at 701 and 2103; 2103-2804 stays spooled.
PERSISTED = [(0, 701), (701, 2103)]
HIVE = ('date={{ .Spool.FirstAppendTime.Format "2006-01-02" }}/'
        'hour={{ .Spool.FirstAppendTime.Format "15" }}')


async def persisted(stub: pb_grpc.JournalStub, journal: str) -> list[pb.Fragment]:
    """The persisted fragments, once both rolled fragments are listed from the store."""
    for _ in range(400):
        resp = await stub.ListFragments(pb.FragmentsRequest(journal=journal))
        done = [f.spec for f in resp.fragments if f.spec.mod_time]
        if [(f.begin, f.end) for f in done] == PERSISTED:
            return done
        await asyncio.sleep(0.05)
    raise AssertionError(f"fragments not persisted: {resp}")


async def fill(stub: pb_grpc.JournalStub, s3: S3Server, name: str, codec: int
               ) -> list[pb.Fragment]:
    await create(stub, journal_spec(name, length=1024, codec=codec, stores=(s3.store_url,)))
    for part in PARTS:
        await append(stub, name, part)
    return await persisted(stub, name)


def stored(s3: S3Server, fragment: pb.Fragment) -> bytes:
    """The object of `fragment`, fetched with plain boto3."""
    key = f"{s3.prefix}/{content_path(fragment)}"
    body: bytes = s3.client().get_object(Bucket=s3.bucket, Key=key)["Body"].read()
    return body


def cli(argv: list[str], data: bytes) -> bytes:
    return subprocess.run(argv, input=data, capture_output=True, check=True).stdout


def expected(fragment: pb.Fragment) -> bytes:
    return b"".join(PARTS)[fragment.begin:fragment.end]


@pytest.mark.parametrize("codec", [pb.GZIP, pb.GZIP_OFFLOAD_DECOMPRESSION],
                         ids=["GZIP", "GZIP_OFFLOAD_DECOMPRESSION"])
async def test_gzip_fragments_persist_to_s3_and_decode_with_gzip_and_gunzip(
        broker: Broker, stub: pb_grpc.JournalStub, s3: S3Server, codec: int) -> None:
    fragments = await fill(stub, s3, "s3/gzip", codec)

    assert [(f.backing_store, f.compression_codec) for f in fragments] == [
        (s3.store_url, codec)] * 2
    for fragment in fragments:
        raw = stored(s3, fragment)
        assert gzip.decompress(raw) == expected(fragment)
        assert cli(["gunzip", "-c"], raw) == expected(fragment)
    assert await content(stub, "s3/gzip") == b"".join(PARTS)


async def test_zstandard_fragments_decode_with_the_zstd_cli(
        broker: Broker, stub: pb_grpc.JournalStub, s3: S3Server) -> None:
    fragments = await fill(stub, s3, "s3/zstd", pb.ZSTANDARD)

    keys = sorted(obj["Key"] for obj in s3.client().list_objects_v2(
        Bucket=s3.bucket)["Contents"] if obj["Key"].startswith("fragments/s3/zstd/"))
    assert keys == [f"fragments/{content_path(f)}" for f in fragments]
    assert all(key.endswith(".zst") for key in keys)
    for fragment in fragments:
        assert cli(["zstd", "-d", "-c"], stored(s3, fragment)) == expected(fragment)


async def test_reads_of_persisted_fragments_come_from_s3(
        broker: Broker, stub: pb_grpc.JournalStub, s3: S3Server) -> None:
    fragments = await fill(stub, s3, "s3/read", pb.SNAPPY)

    # From the middle of the first persisted fragment to the spool's end.
    out = await read_all(stub, pb.ReadRequest(journal="s3/read", offset=350))
    metadata = [r for r in out if not r.content]
    assert [(r.status, r.offset, r.fragment.begin, r.fragment.end, r.fragment.backing_store)
            for r in metadata] == [
        (pb.OK, 350, 0, 701, s3.store_url),
        (pb.OK, 701, 701, 2103, s3.store_url),
        (pb.OK, 2103, 2103, 2804, ""),
        (pb.OFFSET_NOT_YET_AVAILABLE, 2804, 0, 0, "")]
    assert [r.fragment_url.startswith(f"{s3.endpoint}/{s3.bucket}/fragments/s3/read/")
            for r in metadata[:2]] == [True, True]
    assert b"".join(r.content for r in out) == b"".join(PARTS)[350:]
    assert [stored(s3, f) != expected(f) for f in fragments] == [True, True]  # compressed


def hive_now() -> str:
    return time.strftime("date=%Y-%m-%d/hour=%H", time.gmtime())


async def test_postfix_template_places_fragments_under_hive_partitions(
        broker: Broker, stub: pb_grpc.JournalStub, s3: S3Server) -> None:
    spec = journal_spec("s3/hive", length=1024, codec=pb.GZIP, stores=(s3.store_url,))
    spec.fragment.path_postfix_template = HIVE
    before = hive_now()
    await create(stub, spec)
    for part in PARTS:
        await append(stub, "s3/hive", part)
    fragments = await persisted(stub, "s3/hive")
    partitions = {before, hive_now()}  # The same, unless an hour boundary passed.

    assert [f.path_postfix in partitions for f in fragments] == [True, True]
    keys = sorted(obj["Key"] for obj in s3.client().list_objects_v2(
        Bucket=s3.bucket, Prefix="fragments/s3/hive/")["Contents"])
    assert keys == [f"fragments/s3/hive/{f.path_postfix}/{content_name(f)}" for f in fragments]
    assert [gzip.decompress(stored(s3, f)) for f in fragments] == [
        expected(f) for f in fragments]
    out = await read_all(stub, pb.ReadRequest(journal="s3/hive", offset=0))
    assert [(r.fragment.path_postfix, r.fragment.backing_store) for r in out
            if r.status == pb.OK and not r.content][:2] == [
        (f.path_postfix, s3.store_url) for f in fragments]
    assert b"".join(r.content for r in out) == b"".join(PARTS)
