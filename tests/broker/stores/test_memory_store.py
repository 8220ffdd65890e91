"""In-process memory store: shared buckets, listing, reading and deleting."""

from __future__ import annotations

import time

import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.fragment_ext import sum_from_hex
from gazette_core.broker.stores.base import StoreError
from gazette_core.broker.stores.memory import MemoryStore
from gazette_core.broker.stores.url import parse_store_url

SUM = "00000000000000000000000000000000000000ab"


def _fragment(begin: int, end: int) -> pb.Fragment:
    return pb.Fragment(journal="mem/journal", begin=begin, end=end, sum=sum_from_hex(SUM),
                       compression_codec=pb.ZSTANDARD)


async def test_put_list_open_delete() -> None:
    store = MemoryStore(parse_store_url("memory://memory-test/prefix/"))
    before = int(time.time())
    data = bytes(range(256)) * 5000
    await store.put(_fragment(0, 10), data, "gzip")
    await store.put(_fragment(10, 20), b"second")
    assert store.key_of(_fragment(0, 10)) == (
        f"prefix/mem/journal/0000000000000000-000000000000000a-{SUM}.zst"
    )
    assert store.object(_fragment(0, 10)).content_encoding == "gzip"

    # A second store of the same name sees the same objects.
    other = MemoryStore(parse_store_url("memory://memory-test/prefix/"))
    listed = await other.list("mem/journal")
    mod_times = [f.mod_time for f in listed]
    assert all(before <= t <= int(time.time()) for t in mod_times)
    expected = [_fragment(0, 10), _fragment(10, 20)]
    for fragment, mod_time in zip(expected, mod_times, strict=True):
        fragment.backing_store = "memory://memory-test/prefix/"
        fragment.mod_time = mod_time
    assert listed == expected

    assert b"".join([c async for c in other.open(_fragment(0, 10))]) == data
    assert store.sign_get(_fragment(10, 20), 60) == (
        f"memory://memory-test/prefix/mem/journal/000000000000000a-0000000000000014-{SUM}.zst"
    )
    await store.delete(_fragment(0, 10))
    assert not await store.exists(_fragment(0, 10))
    with pytest.raises(StoreError) as exc:
        await store.delete(_fragment(0, 10))
    assert str(exc.value) == (
        "memory store 'memory://memory-test/prefix/': no object "
        f"'prefix/mem/journal/0000000000000000-000000000000000a-{SUM}.zst'"
    )
