"""read_fragment: decompressed content of a stored fragment from an offset."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from gazette_core.broker.codecs import compress
from gazette_core.broker.fragment.remote import FragmentReadError, read_fragment
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.fragment_ext import sha1_to_sum
from gazette_core.broker.stores.fs import FileStore
from gazette_core.broker.stores.url import parse_store_url

CONTENT = bytes(range(256)) * 12_000  # ~3 MiB: several store chunks.
BEGIN = 5000


def _fragment(codec: int, content: bytes = CONTENT) -> pb.Fragment:
    return pb.Fragment(
        journal="remote/journal", begin=BEGIN, end=BEGIN + len(content),
        sum=sha1_to_sum(hashlib.sha1(content).digest()), compression_codec=codec,
        backing_store="file:///", mod_time=1,
    )


async def _stored(tmp_path: Path, fragment: pb.Fragment, data: bytes) -> FileStore:
    store = FileStore(parse_store_url("file:///"), str(tmp_path))
    await store.put(fragment, data)
    return store


async def _read_all(store: FileStore, fragment: pb.Fragment, offset: int) -> bytes:
    return b"".join([chunk async for chunk in read_fragment(store, fragment, offset)])


@pytest.mark.parametrize("codec", [pb.NONE, pb.GZIP, pb.ZSTANDARD, pb.SNAPPY,
                                   pb.GZIP_OFFLOAD_DECOMPRESSION])
async def test_reads_decompressed_content_from_offsets(tmp_path: Path, codec: int) -> None:
    fragment = _fragment(codec)
    store = await _stored(tmp_path, fragment, compress(codec, CONTENT))
    assert await _read_all(store, fragment, BEGIN) == CONTENT
    assert await _read_all(store, fragment, BEGIN + 1_500_000) == CONTENT[1_500_000:]
    assert await _read_all(store, fragment, fragment.end) == b""


async def test_stopping_early_is_clean(tmp_path: Path) -> None:
    fragment = _fragment(pb.NONE)
    store = await _stored(tmp_path, fragment, CONTENT)
    reader = read_fragment(store, fragment, BEGIN)
    first = await reader.__anext__()
    await reader.aclose()
    assert first == CONTENT[: len(first)]


async def test_short_content_is_an_error(tmp_path: Path) -> None:
    fragment = _fragment(pb.GZIP)
    store = await _stored(tmp_path, fragment, compress(pb.GZIP, CONTENT[:-1]))
    with pytest.raises(FragmentReadError) as exc:
        await _read_all(store, fragment, BEGIN)
    assert str(exc.value) == (
        f"fragment remote/journal/{BEGIN:016x}-{fragment.end:016x}-"
        f"{hashlib.sha1(CONTENT).hexdigest()}.gz ended at offset {fragment.end - 1}, "
        f"expected {fragment.end}"
    )


async def test_long_content_is_an_error(tmp_path: Path) -> None:
    fragment = _fragment(pb.NONE, b"12345")
    store = await _stored(tmp_path, fragment, b"123456")
    with pytest.raises(FragmentReadError) as exc:
        await _read_all(store, fragment, BEGIN)
    assert str(exc.value) == (
        f"fragment remote/journal/{BEGIN:016x}-{fragment.end:016x}-"
        f"{hashlib.sha1(b'12345').hexdigest()}.raw has content beyond its end {fragment.end}"
    )


async def test_offset_outside_fragment_is_an_error(tmp_path: Path) -> None:
    fragment = _fragment(pb.NONE)
    store = await _stored(tmp_path, fragment, CONTENT)
    with pytest.raises(FragmentReadError) as exc:
        await _read_all(store, fragment, BEGIN - 1)
    assert str(exc.value) == (
        f"offset {BEGIN - 1} is outside fragment [{BEGIN}, {fragment.end}) of 'remote/journal'"
    )
