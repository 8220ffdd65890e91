"""Fragments: rolls, persisted file names and codecs, ListFragments, and broker restarts."""

from __future__ import annotations

import asyncio
import hashlib
import shutil
from pathlib import Path

import aetcd
import pytest

from gazette_core.broker.codecs import new_decompressor
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.protocol.fragment_ext import content_name, sha1_to_sum
from gazette_core.broker.service import Broker
from gazette_core.testing.broker import broker_config, journal_spec, journal_stub, running_broker
from gazette_core.testing.etcd import EtcdServer
from tests.broker.support import append, create, read_all, wait_assigned

CODECS = [pb.NONE, pb.GZIP, pb.ZSTANDARD, pb.SNAPPY]


async def persisted(stub: pb_grpc.JournalStub, journal: str, count: int,
                    **filters: int) -> list[pb.FragmentsResponse._Fragment]:
    """ListFragments once `count` fragments are persisted (the index refreshes on persist)."""
    for _ in range(200):
        resp = await stub.ListFragments(pb.FragmentsRequest(journal=journal, **filters))
        done = [f for f in resp.fragments if f.spec.mod_time]
        if len(done) >= count:
            return list(resp.fragments)
        await asyncio.sleep(0.05)
    raise AssertionError(f"fewer than {count} persisted fragments: {resp}")


def stored(root: Path, frag: pb.Fragment) -> bytes:
    raw = (root / frag.journal / content_name(frag)).read_bytes()
    d = new_decompressor(frag.compression_codec)
    return d.decompress(raw) + d.finish()


@pytest.mark.parametrize("codec", CODECS, ids=[pb.CompressionCodec.Name(c) for c in CODECS])
async def test_rolled_fragments_persist_with_exact_names(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path, codec: int) -> None:
    await create(stub, journal_spec("p/journal", length=1024, codec=codec))
    parts = [bytes([65 + i]) * 800 for i in range(4)]
    for part in parts:
        await append(stub, "p/journal", part)
    frags = await persisted(stub, "p/journal", 2)
    specs = [f.spec for f in frags]
    assert [(s.begin, s.end, s.compression_codec) for s in specs] == [
        (0, 800, codec), (800, 2400, codec), (2400, 3200, codec)]
    assert [bool(s.mod_time) for s in specs] == [True, True, False]
    assert [s.backing_store for s in specs] == ["file:///", "file:///", ""]
    for spec, content in ((specs[0], parts[0]), (specs[1], parts[1] + parts[2])):
        assert spec.sum == sha1_to_sum(hashlib.sha1(content).digest())
        assert stored(tmp_path, spec) == content
    ext = {pb.NONE: ".raw", pb.GZIP: ".gz", pb.ZSTANDARD: ".zst", pb.SNAPPY: ".sz"}[codec]
    names = sorted(p.name for p in (tmp_path / "p" / "journal").iterdir())
    assert names == [
        f"0000000000000000-0000000000000320-{hashlib.sha1(parts[0]).hexdigest()}{ext}",
        f"0000000000000320-0000000000000960-"
        f"{hashlib.sha1(parts[1] + parts[2]).hexdigest()}{ext}"]


async def test_list_fragments_pages_and_filters(broker: Broker,
                                                stub: pb_grpc.JournalStub) -> None:
    await create(stub, journal_spec("p/journal", length=1024))
    for i in range(4):
        await append(stub, "p/journal", bytes([i]) * 1500)
    await persisted(stub, "p/journal", 3)
    page1 = await stub.ListFragments(pb.FragmentsRequest(journal="p/journal", page_limit=2))
    assert [f.spec.begin for f in page1.fragments] == [0, 1500]
    assert page1.next_page_token == 3000
    page2 = await stub.ListFragments(pb.FragmentsRequest(
        journal="p/journal", page_limit=2, next_page_token=page1.next_page_token))
    assert [f.spec.begin for f in page2.fragments] == [3000, 4500]
    assert page2.next_page_token == 0
    newest = max(f.spec.mod_time for f in page1.fragments)
    upto = await stub.ListFragments(pb.FragmentsRequest(journal="p/journal",
                                                        end_mod_time=newest))
    assert all(f.spec.mod_time for f in upto.fragments)  # local fragments excluded


async def test_restart_continues_after_persisted_content(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path) -> None:
    config = broker_config(etcd_server.endpoint, str(tmp_path))
    async with running_broker(config) as broker, journal_stub(broker.endpoint) as stub:
        await create(stub, journal_spec("r/journal", length=1 << 20))
        await append(stub, "r/journal", b"before restart\n")
        await append(stub, "r/journal", b"still before\n")
    # Stopping persisted the spool: the second broker finds every byte in the store.
    async with running_broker(config) as broker, journal_stub(broker.endpoint) as stub:
        await wait_assigned(stub, "r/journal")
        resp = await append(stub, "r/journal", b"after restart\n")
        assert (resp.status, resp.commit.begin) == (pb.OK, 28)
        content = b"".join(r.content for r in await read_all(
            stub, pb.ReadRequest(journal="r/journal")))
        assert content == b"before restart\nstill before\nafter restart\n"


async def test_stopping_gives_up_persisting_after_the_configured_timeout(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    store_root = tmp_path / "mount"
    store_root.mkdir()
    config = broker_config(etcd_server.endpoint, str(tmp_path), persist_on_stop_timeout=1.0)
    async with running_broker(config) as broker, journal_stub(broker.endpoint) as stub:
        await create(stub, journal_spec("stuck/journal", stores=("file:///mount/",)))
        await append(stub, "stuck/journal", b"never persisted\n")
        shutil.rmtree(store_root)  # the store's mount went away: every persist now fails
        async with asyncio.timeout(30):  # the default would keep trying for 300 s
            await broker.stop()
    assert "gave up persisting 1 spool(s) after 1s" in caplog.text


async def create_wait(stub: pb_grpc.JournalStub, journal: str) -> None:
    from tests.broker.support import wait_assigned
    await wait_assigned(stub, journal)
