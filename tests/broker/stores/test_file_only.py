"""--broker.file-only: every store URL is served by file:/// under the file root, and
fragments keep the journal's configured store as their backing_store."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import aetcd
import pytest_asyncio

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.protocol.fragment_ext import content_name
from gazette_core.broker.service import Broker
from gazette_core.broker.stores.base import UnusableStore
from gazette_core.broker.stores.fs import FileStore
from gazette_core.broker.stores.registry import get_store
from gazette_core.testing.broker import broker_config, journal_spec, journal_stub, running_broker
from gazette_core.testing.etcd import EtcdServer
from tests.broker.support import append, content, create

# Port 1 on loopback: were the mapping skipped, the S3 client would fail here, not go out.
S3_URL = "s3://some-bucket/a/prefix/?endpoint=http%3A%2F%2F127.0.0.1%3A1&region=eu-west-1"
# The first append is a fragment of its own; the next two share the spool.
PARTS = [bytes([97 + i]) * 700 for i in range(3)]


@pytest_asyncio.fixture(loop_scope="session")
async def file_only_stub(etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path
                         ) -> AsyncIterator[pb_grpc.JournalStub]:
    config = broker_config(etcd_server.endpoint, str(tmp_path), file_only=True)
    async with running_broker(config) as broker, journal_stub(broker.endpoint) as stub:
        yield stub


async def test_an_s3_journal_persists_into_the_file_root(
        file_only_stub: pb_grpc.JournalStub, tmp_path: Path) -> None:
    stub = file_only_stub
    await create(stub, journal_spec("fo/journal", length=1024, stores=(S3_URL,)))
    for part in PARTS:
        await append(stub, "fo/journal", part)

    for _ in range(400):
        resp = await stub.ListFragments(pb.FragmentsRequest(journal="fo/journal"))
        if [f.spec.mod_time != 0 for f in resp.fragments] == [True, False]:
            break
        await asyncio.sleep(0.05)
    specs = [f.spec for f in resp.fragments]
    assert [(s.begin, s.end, s.backing_store) for s in specs] == [
        (0, 700, S3_URL), (700, 2100, "")]
    # The original prefix (a/prefix/) is discarded: the journal sits at the root.
    stored = tmp_path / "fo" / "journal" / content_name(specs[0])
    assert stored.read_bytes() == PARTS[0]
    assert sorted(p.name for p in (tmp_path / "fo" / "journal").iterdir()) == [stored.name]
    assert await content(stub, "fo/journal") == b"".join(PARTS)


async def test_reads_of_persisted_fragments_come_from_the_file_root(
        file_only_stub: pb_grpc.JournalStub) -> None:
    stub = file_only_stub
    await create(stub, journal_spec("fo/read", length=1024, stores=(S3_URL,)))
    for part in PARTS:
        await append(stub, "fo/read", part)
    for _ in range(400):
        resp = await stub.ListFragments(pb.FragmentsRequest(journal="fo/read"))
        if resp.fragments and resp.fragments[0].spec.mod_time:
            break
        await asyncio.sleep(0.05)

    out = [r async for r in stub.Read(pb.ReadRequest(journal="fo/read", offset=100))]

    first = out[0]
    assert (first.fragment.backing_store, first.fragment_url) == (
        S3_URL, f"file:///fo/read/{content_name(first.fragment)}")
    assert b"".join(r.content for r in out) == b"".join(PARTS)[100:]


def test_every_url_maps_to_the_root_file_store(tmp_path: Path) -> None:
    for url in (S3_URL, "gs://bucket/x/", "file:///elsewhere/", "azure://c/p/?bogus=1"):
        store = get_store(url, str(tmp_path), file_only=True)
        assert isinstance(store, FileStore)
        assert (store.url, store.root) == (url, str(tmp_path) + "/")
    assert get_store(S3_URL, str(tmp_path), file_only=True) is get_store(
        S3_URL, str(tmp_path), file_only=True)
    assert not isinstance(get_store(S3_URL, str(tmp_path)), FileStore)


def test_a_malformed_url_is_still_unusable(tmp_path: Path) -> None:
    store = get_store("s3://bucket/no-slash", str(tmp_path), file_only=True)
    assert isinstance(store, UnusableStore)
    assert store.reason == "path of store URL 's3://bucket/no-slash' must end in '/'"


def test_broker_store_for_follows_the_flag(tmp_path: Path) -> None:
    plain = Broker(broker_config("http://127.0.0.1:1", str(tmp_path)))
    file_only = Broker(broker_config("http://127.0.0.1:1", str(tmp_path), file_only=True))
    assert isinstance(file_only.store_for(S3_URL), FileStore)
    assert not isinstance(plain.store_for(S3_URL), FileStore)
