"""Persister: completed spools land in stores[0], compressed, and are reported back."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import logging
import time
from pathlib import Path

import pytest

from gazette_core.broker.codecs import decompress
from gazette_core.broker.fragment.persister import Persister
from gazette_core.broker.fragment.spool import Spool
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.fragment_ext import sha1_to_sum
from gazette_core.broker.stores.memory import MemoryStore
from gazette_core.broker.stores.registry import get_store

JOURNAL = "persist/journal"
CONTENT = b"a line of journal content\n" * 50_000


def _spec(stores: list[str], codec: int = pb.GZIP, template: str = "") -> pb.JournalSpec:
    return pb.JournalSpec(
        name=JOURNAL,
        fragment=pb.JournalSpec.Fragment(
            stores=stores, compression_codec=codec, path_postfix_template=template
        ),
    )


def _rolled_spool(tmp_path: Path, codec: int, content: bytes = CONTENT) -> Spool:
    spool = Spool(JOURNAL, str(tmp_path))
    spool.apply(pb.ReplicateRequest(proposal=spool.roll_proposal(0, codec)))
    for start in range(0, len(content), 65536):
        spool.apply(pb.ReplicateRequest(content=content[start : start + 65536],
                                        content_delta=start))
    spool.apply(pb.ReplicateRequest(proposal=spool.proposal_with_delta()))
    _, completed = spool.apply(
        pb.ReplicateRequest(proposal=spool.roll_proposal(len(content), codec))
    )
    assert completed is not None
    return completed


def _expected(codec: int, store: str, mod_time: int, content: bytes = CONTENT) -> pb.Fragment:
    return pb.Fragment(
        journal=JOURNAL, begin=0, end=len(content),
        sum=sha1_to_sum(hashlib.sha1(content).digest()), compression_codec=codec,
        backing_store=store, mod_time=mod_time,
    )


@pytest.mark.parametrize(
    ("codec", "suffix"),
    [(pb.NONE, ".raw"), (pb.GZIP, ".gz"), (pb.ZSTANDARD, ".zst"), (pb.SNAPPY, ".sz")],
)
async def test_rolled_spool_is_written_to_file_store(
    tmp_path: Path, codec: int, suffix: str
) -> None:
    (tmp_path / "root/fragments").mkdir(parents=True)
    persister = Persister(str(tmp_path / "root"))
    persister.start()
    reported: list[pb.Fragment] = []
    before = int(time.time())
    persister.enqueue(_rolled_spool(tmp_path, codec), _spec(["file:///fragments/"], codec),
                      reported.append)
    await persister.stop()

    digest = hashlib.sha1(CONTENT).hexdigest()
    path = tmp_path / f"root/fragments/{JOURNAL}/0000000000000000-{len(CONTENT):016x}-{digest}"
    stored = path.with_name(path.name + suffix).read_bytes()
    assert decompress(codec, stored) == CONTENT
    assert len(reported) == 1
    assert before <= reported[0].mod_time <= int(time.time())
    assert reported == [_expected(codec, "file:///fragments/", reported[0].mod_time)]


async def test_gzip_offload_is_put_with_content_encoding(tmp_path: Path) -> None:
    url = "memory://persister-offload/"
    persister = Persister(str(tmp_path))
    persister.enqueue(_rolled_spool(tmp_path, pb.GZIP_OFFLOAD_DECOMPRESSION),
                      _spec([url], pb.GZIP_OFFLOAD_DECOMPRESSION))
    await persister.stop()
    store = get_store(url, str(tmp_path))
    assert isinstance(store, MemoryStore)
    stored = store.object(_expected(pb.GZIP_OFFLOAD_DECOMPRESSION, "", 0))
    assert stored.content_encoding == "gzip"
    assert gzip.decompress(stored.data) == CONTENT


async def test_no_stores_persists_nothing(tmp_path: Path) -> None:
    persister = Persister(str(tmp_path))
    persister.start()
    reported: list[pb.Fragment] = []
    persister.enqueue(_rolled_spool(tmp_path, pb.GZIP), _spec([]), reported.append)
    await persister.stop()
    assert reported == []


async def test_existing_object_is_not_rewritten(tmp_path: Path) -> None:
    url = "memory://persister-existing/"
    store = get_store(url, str(tmp_path))
    assert isinstance(store, MemoryStore)
    await store.put(_expected(pb.SNAPPY, "", 0), b"already here")
    persister = Persister(str(tmp_path))
    reported: list[pb.Fragment] = []
    persister.enqueue(_rolled_spool(tmp_path, pb.SNAPPY), _spec([url], pb.SNAPPY),
                      reported.append)
    await persister.stop()
    assert store.object(_expected(pb.SNAPPY, "", 0)).data == b"already here"
    assert reported == [_expected(pb.SNAPPY, url, reported[0].mod_time)]


async def test_failed_persist_is_retried_until_it_succeeds(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    persister = Persister(str(tmp_path), retry_delays=(0.01,))
    persister.start()
    reported: list[pb.Fragment] = []
    content = b"retried content"
    with caplog.at_level(logging.WARNING, logger="gazette_core.broker.fragment.persister"):
        persister.enqueue(_rolled_spool(tmp_path, pb.NONE, content),
                          _spec(["file:///later/"], pb.NONE), reported.append)
        while not caplog.records:
            await asyncio.sleep(0.01)
    name = f"0000000000000000-000000000000000f-{hashlib.sha1(content).hexdigest()}.raw"
    assert caplog.records[0].getMessage() == (
        f"persisting {JOURNAL}/{name} failed (retrying in 0.01s): file store "
        f"'file:///later/': root directory '{tmp_path}/later/' does not exist"
    )
    (tmp_path / "later").mkdir()
    await persister.stop()
    assert (tmp_path / "later" / JOURNAL / name).read_bytes() == content
    assert reported == [_expected(pb.NONE, "file:///later/", reported[0].mod_time, content)]


async def test_stop_gives_up_after_timeout_and_reports_what_is_left(tmp_path: Path) -> None:
    # The store root does not exist, so every attempt fails and is retried.
    persister = Persister(str(tmp_path / "missing-root"), retry_delays=(0.05,))
    persister.start()
    spool = Spool("a/journal", str(tmp_path))
    spool.apply(pb.ReplicateRequest(content=b"data", content_delta=0))
    spool.apply(pb.ReplicateRequest(proposal=spool.proposal_with_delta(),
                                    registers=spool.registers, acknowledge=True))
    completed = spool.apply(pb.ReplicateRequest(
        proposal=spool.roll_proposal(spool.fragment.end, pb.NONE),
        registers=spool.registers, acknowledge=True))[1]
    assert completed is not None
    spec = pb.JournalSpec(name="a/journal")
    spec.fragment.stores.append("file:///")
    persister.enqueue(completed, spec)
    assert await persister.stop(timeout=0.3) == 1
