"""File store: exact on-disk names, listing, reading back, deleting, rewriting."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.fragment_ext import sum_from_hex
from gazette_core.broker.stores.base import FragmentStore, StoreError
from gazette_core.broker.stores.fs import FileStore
from gazette_core.broker.stores.registry import get_store
from gazette_core.broker.stores.url import parse_store_url

SUM = "0000000000002694000000000000000000000000"
NAME = f"00000000000003e8-00000000000005dc-{SUM}.sz"


def _fragment(
    journal: str = "my/journal", codec: int = pb.SNAPPY, postfix: str = ""
) -> pb.Fragment:
    return pb.Fragment(
        journal=journal, begin=1000, end=1500, sum=sum_from_hex(SUM),
        compression_codec=codec, path_postfix=postfix,
    )


def _store(root: Path, url: str = "file:///fragments/") -> FileStore:
    return FileStore(parse_store_url(url), str(root))


async def _read(store: FragmentStore, fragment: pb.Fragment) -> bytes:
    return b"".join([chunk async for chunk in store.open(fragment)])


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


async def test_put_writes_content_named_file(tmp_path: Path) -> None:
    (tmp_path / "fragments").mkdir()
    store = _store(tmp_path)
    await store.put(_fragment(), b"compressed bytes")
    await store.put(_fragment(codec=pb.GZIP_OFFLOAD_DECOMPRESSION, postfix="date=2019"), b"gz")
    assert _files(tmp_path) == [
        f"fragments/my/journal/{NAME}",
        f"fragments/my/journal/date=2019/00000000000003e8-00000000000005dc-{SUM}",
    ]
    assert (tmp_path / "fragments/my/journal" / NAME).read_bytes() == b"compressed bytes"
    assert await store.exists(_fragment())
    assert not await store.exists(_fragment(journal="other/journal"))


async def test_list_parses_files_and_skips_junk(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "fragments").mkdir()
    store = _store(tmp_path)
    await store.put(_fragment(), b"one")
    await store.put(_fragment(postfix="hour=22"), b"two")
    await store.put(_fragment(journal="my/journal/longer"), b"three")
    await store.put(_fragment(journal="my/journalX"), b"not listed")
    (tmp_path / "fragments/my/journal/junk.txt").write_bytes(b"junk")
    (tmp_path / "fragments/my/journal/.partial-abc").write_bytes(b"in progress")
    mtime = 1_600_000_000
    for path in (tmp_path / "fragments/my/journal").rglob("*"):
        os.utime(path, (mtime, mtime))

    with caplog.at_level(logging.WARNING):
        listed = await store.list("my/journal")
    expected = [_fragment(postfix=p) for p in ("", "hour=22", "longer")]
    for fragment in expected:
        fragment.backing_store = "file:///fragments/"
        fragment.mod_time = mtime
    assert listed == expected
    assert [r.getMessage() for r in caplog.records] == [
        "skipping unrecognized object 'junk.txt' in store file:///fragments/: content_path: "
        "\"junk.txt\": expected a name of the form <begin>-<end>-<sha1><ext>"
    ]


async def test_list_of_unknown_journal_is_empty(tmp_path: Path) -> None:
    (tmp_path / "fragments").mkdir()
    assert await _store(tmp_path).list("never/written") == []


async def test_open_reads_back_and_delete_removes(tmp_path: Path) -> None:
    (tmp_path / "fragments").mkdir()
    store = _store(tmp_path)
    data = os.urandom(3 * 1024 * 1024 + 17)
    await store.put(_fragment(), data)
    assert await _read(store, _fragment()) == data
    await store.delete(_fragment())
    assert _files(tmp_path) == []
    with pytest.raises(StoreError) as exc:
        await store.delete(_fragment())
    path = tmp_path / "fragments/my/journal" / NAME
    assert str(exc.value) == (
        f"file store 'file:///fragments/': delete {path}: "
        f"[Errno 2] No such file or directory: '{path}'"
    )


async def test_put_refuses_missing_store_root(tmp_path: Path) -> None:
    store = _store(tmp_path, "file:///not/mounted/")
    with pytest.raises(StoreError) as exc:
        await store.put(_fragment(), b"data")
    assert str(exc.value) == (
        f"file store 'file:///not/mounted/': root directory '{tmp_path}/not/mounted/' "
        "does not exist"
    )
    assert _files(tmp_path) == []


async def test_find_replace_rewrites_paths(tmp_path: Path) -> None:
    (tmp_path / "fragments").mkdir()
    store = _store(tmp_path, "file:///fragments/?find=my/&replace=old/")
    await store.put(_fragment(), b"data")
    assert _files(tmp_path) == [f"fragments/old/journal/{NAME}"]
    listed = await store.list("my/journal")
    assert [(f.journal, f.begin, f.end) for f in listed] == [("my/journal", 1000, 1500)]
    assert await _read(store, _fragment()) == b"data"
    assert store.sign_get(_fragment(), 60) == f"file:///fragments/old/journal/{NAME}"


def test_sign_get_is_store_path_url(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert store.sign_get(_fragment(), 60) == f"file:///fragments/my/journal/{NAME}"


@pytest.mark.parametrize("url", ["file:///../outside/", "file:///a/../../outside/",
                                 "file:///fragments/?find=my/&replace=../../outside/"])
async def test_urls_leaving_the_file_root_reach_nothing_outside_it(tmp_path: Path,
                                                                    url: str) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "fragments").mkdir(parents=True)
    outside.mkdir()
    (outside / "my" / "journal").mkdir(parents=True)
    (outside / "my" / "journal" / NAME).write_bytes(b"not the store's")
    store = get_store(url, str(root))
    for operation in (store.put(_fragment(), b"data"), _read(store, _fragment()),
                      store.delete(_fragment())):
        with pytest.raises(StoreError):
            await operation
    assert _files(outside) == [f"my/journal/{NAME}"]
    assert (outside / "my" / "journal" / NAME).read_bytes() == b"not the store's"


async def test_symlinks_out_of_the_file_root_are_not_followed(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "fragments").mkdir(parents=True)
    outside.mkdir()
    (root / "link").symlink_to(outside)  # a store root that is a link out
    (root / "fragments" / "my").symlink_to(outside)  # a journal directory that is one
    (outside / "journal").mkdir()
    (outside / "journal" / NAME).write_bytes(b"secret")
    for store in (_store(root, "file:///link/"), _store(root)):
        with pytest.raises(StoreError) as exc:
            await store.put(_fragment(), b"data")
        assert "escapes the file root" in str(exc.value)
        for operation in (_read(store, _fragment()), store.delete(_fragment()),
                          store.list("my/journal")):
            with pytest.raises(StoreError):
                await operation
    assert _files(outside) == [f"journal/{NAME}"]


async def test_a_file_root_reached_through_a_symlink_works(tmp_path: Path) -> None:
    (tmp_path / "real" / "fragments").mkdir(parents=True)
    (tmp_path / "root").symlink_to(tmp_path / "real")
    store = _store(tmp_path / "root")
    await store.put(_fragment(), b"data")
    assert await _read(store, _fragment()) == b"data"
    assert _files(tmp_path / "real") == [f"fragments/my/journal/{NAME}"]
