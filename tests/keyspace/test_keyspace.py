"""KeySpace against a real etcd: load, ordered watch application, revisions and re-loads."""

from __future__ import annotations

import asyncio

import aetcd
import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.keyspace import etcd_util as eu
from gazette_core.keyspace.keyspace import KeySpace, KeyValue

ROOT = "/ks/"


def decode(key: str, value: bytes) -> object:
    if value == b"bad":
        raise ValueError(f"bad value at {key}")
    return value.decode().upper()


async def put(client: aetcd.Client, key: str, value: bytes) -> int:
    resp = await eu.txn(client, [], [eu.put_op(key, value)])
    return int(resp.header.revision)


async def delete(client: aetcd.Client, key: str) -> int:
    resp = await eu.txn(client, [], [eu.delete_op(key)])
    return int(resp.header.revision)


def snapshot(ks: KeySpace) -> list[tuple[str, object, int]]:
    return [(kv.key, kv.decoded, kv.mod_revision) for kv in ks.prefixed(ROOT)]


async def test_load_mirrors_prefix_in_key_order(etcd: aetcd.Client) -> None:
    r1 = await put(etcd, "/ks/b", b"two")
    r2 = await put(etcd, "/ks/a", b"one")
    await put(etcd, "/ks/c", b"bad")
    r4 = await put(etcd, "/other", b"x")

    ks = KeySpace(etcd, ROOT, decode)
    await ks.load()
    assert ks.prefixed(ROOT) == [
        KeyValue("/ks/a", b"one", "ONE", r2, r2, 1, 0),
        KeyValue("/ks/b", b"two", "TWO", r1, r1, 1, 0),
    ]
    assert ks.prefixed("/ks/b") == [KeyValue("/ks/b", b"two", "TWO", r1, r1, 1, 0)]
    assert ks.get("/ks/c") is None
    assert ks.revision == r4
    assert ks.header.revision == r4
    assert ks.header.cluster_id and ks.header.member_id and ks.header.raft_term


async def until_watched(ks: KeySpace, rev: int) -> None:
    """Wait for `rev` through watch events only (no re-reading of the prefix)."""
    async with asyncio.timeout(10):
        while ks.revision < rev:
            await ks.wait_for_change(ks.revision)


async def test_watch_applies_puts_and_deletes_in_order(etcd: aetcd.Client) -> None:
    ks = KeySpace(etcd, ROOT, decode)
    seen: list[list[tuple[str, object, int]]] = []
    ks.observers.append(lambda: seen.append(snapshot(ks)))
    await ks.load()
    ks.start()
    try:
        # Once a write made after start() shows up, the watch is live.
        await until_watched(ks, await put(etcd, "/ks/sentinel", b"s"))
        await until_watched(ks, await delete(etcd, "/ks/sentinel"))
        seen.clear()

        r1 = await put(etcd, "/ks/x", b"1")
        both = await eu.txn(etcd, [], [eu.put_op("/ks/a", b"2"), eu.put_op("/ks/x", b"3")])
        r2 = int(both.header.revision)
        await delete(etcd, "/ks/a")
        r4 = await put(etcd, "/ks/x", b"bad")
        await until_watched(ks, r4)
    finally:
        await ks.stop()

    assert seen == [
        [("/ks/x", "1", r1)],
        [("/ks/a", "2", r2), ("/ks/x", "3", r2)],
        [("/ks/x", "3", r2)],
        [],
    ]
    assert ks.revision == r4
    assert ks.get("/ks/x") is None


async def _observed_burst(etcd: aetcd.Client, watch_delay: float
                          ) -> tuple[list[list[tuple[str, object, int]]], list[int]]:
    """What observers saw of five quick writes, and the writes' revisions."""
    ks = KeySpace(etcd, ROOT, decode, watch_delay=watch_delay)
    seen: list[list[tuple[str, object, int]]] = []
    ks.observers.append(lambda: seen.append(snapshot(ks)))
    await ks.load()
    ks.start()
    try:
        await until_watched(ks, await put(etcd, "/ks/sentinel", b"s"))
        await until_watched(ks, await delete(etcd, "/ks/sentinel"))
        seen.clear()
        revisions = [await put(etcd, f"/ks/{i}", str(i).encode()) for i in range(5)]
        await until_watched(ks, revisions[-1])
    finally:
        await ks.stop()
    return seen, revisions


async def test_a_burst_within_the_watch_delay_is_applied_as_one_update(
        etcd: aetcd.Client) -> None:
    # A generous delay: the five writes land well within it.
    seen, revisions = await _observed_burst(etcd, watch_delay=2.0)
    assert seen == [[(f"/ks/{i}", str(i), revisions[i]) for i in range(5)]]


async def test_no_watch_delay_applies_each_change_as_it_comes(etcd: aetcd.Client) -> None:
    seen, revisions = await _observed_burst(etcd, watch_delay=0)
    assert seen == [[(f"/ks/{i}", str(i), revisions[i]) for i in range(n + 1)]
                    for n in range(5)]


async def test_watched_entry_metadata(etcd: aetcd.Client) -> None:
    async with KeySpace(etcd, ROOT, decode) as ks:
        lease = await etcd.lease(30)
        r1 = await put(etcd, "/ks/k", b"v1")
        resp = await eu.txn(etcd, [], [eu.put_op("/ks/k", b"v2", lease=lease.id)])
        r2 = int(resp.header.revision)
        await ks.wait_for_revision(r2, timeout=10)
        assert ks.get("/ks/k") == KeyValue("/ks/k", b"v2", "V2", r1, r2, 2, lease.id)
        assert ks.header == pb.Header.Etcd(
            cluster_id=resp.header.cluster_id,
            member_id=resp.header.member_id,
            revision=r2,
            raft_term=resp.header.raft_term,
        )


async def test_wait_for_revision_outside_prefix(etcd: aetcd.Client) -> None:
    async with KeySpace(etcd, ROOT, decode) as ks:
        rev = await put(etcd, "/elsewhere", b"x")
        await ks.wait_for_revision(rev, timeout=0.5)
        assert ks.revision >= rev
        assert ks.prefixed(ROOT) == []


async def test_wait_for_revision_times_out(etcd: aetcd.Client) -> None:
    async with KeySpace(etcd, ROOT, decode) as ks:
        with pytest.raises(TimeoutError):
            await ks.wait_for_revision(ks.revision + 100, timeout=0.2)


async def test_wait_for_change(etcd: aetcd.Client) -> None:
    async with KeySpace(etcd, ROOT, decode) as ks:
        start = ks.revision
        rev = await put(etcd, "/ks/z", b"z")
        await ks.wait_for_change(start)
        assert ks.revision == rev
        assert snapshot(ks) == [("/ks/z", "Z", rev)]


async def test_compacted_watch_reloads(etcd: aetcd.Client) -> None:
    ks = KeySpace(etcd, ROOT, decode)
    await ks.load()
    await put(etcd, "/ks/a", b"a")
    rev = await put(etcd, "/ks/b", b"b")
    await etcd.compact(rev)
    ks.start()
    try:
        await ks.wait_for_revision(rev, timeout=10)
        assert [kv.key for kv in ks.prefixed(ROOT)] == ["/ks/a", "/ks/b"]
        rev2 = await put(etcd, "/ks/c", b"c")
        await ks.wait_for_revision(rev2, timeout=10)
        assert [kv.key for kv in ks.prefixed(ROOT)] == ["/ks/a", "/ks/b", "/ks/c"]
    finally:
        await ks.stop()
