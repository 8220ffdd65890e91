"""Announcement against a real etcd: lease-bound key, guarded updates, waiting, revoke, loss."""

from __future__ import annotations

import asyncio

import aetcd
import pytest
from aetcd import rpc

from gazette_core.allocator.announce import Announcement, AnnouncementConflictError
from gazette_core.keyspace import etcd_util as eu

KEY = "/ann/members/zone#member-1"


async def only_kv(client: aetcd.Client, key: str) -> rpc.KeyValue | None:
    resp = await eu.get_prefix(client, key)
    assert len(resp.kvs) <= 1
    return resp.kvs[0] if resp.kvs else None


async def test_announce_puts_key_under_lease_and_revoke_removes_it(etcd: aetcd.Client) -> None:
    ann = Announcement(etcd, KEY, b"v1", ttl=10)
    await ann.announce()
    assert ann.lease_id != 0
    kv = await only_kv(etcd, KEY)
    assert kv == rpc.KeyValue(
        key=KEY.encode(),
        value=b"v1",
        lease=ann.lease_id,
        create_revision=ann.mod_revision,
        mod_revision=ann.mod_revision,
        version=1,
    )
    # An assignment written under the member's lease goes with it.
    await eu.txn(etcd, [], [eu.put_op("/ann/assign/j#zone#member-1#0", b"", ann.lease_id)])

    await ann.revoke()
    assert ann.lease_id == 0
    assert (await eu.get_prefix(etcd, "/ann/")).kvs == []


async def test_update_keeps_lease_and_is_guarded(etcd: aetcd.Client) -> None:
    async with Announcement(etcd, KEY, b"v1", ttl=10) as ann:
        created = ann.mod_revision
        await ann.update(b"v2")
        kv = await only_kv(etcd, KEY)
        assert kv == rpc.KeyValue(
            key=KEY.encode(),
            value=b"v2",
            lease=ann.lease_id,
            create_revision=created,
            mod_revision=ann.mod_revision,
            version=2,
        )
        stale = ann.mod_revision
        await eu.txn(etcd, [], [eu.put_op(KEY, b"other", ann.lease_id)])
        with pytest.raises(AnnouncementConflictError) as err:
            await ann.update(b"v3")
        assert str(err.value) == f"member key {KEY!r} changed since revision {stale}"


async def test_announce_waits_for_key_held_by_another_lease(etcd: aetcd.Client) -> None:
    first = Announcement(etcd, KEY, b"first", ttl=10)
    await first.announce()
    second = Announcement(etcd, KEY, b"second", ttl=10, retry_interval=0.05)
    waiting = asyncio.create_task(second.announce())
    await asyncio.sleep(0.2)
    assert not waiting.done()
    kv = await only_kv(etcd, KEY)
    assert kv is not None and (kv.value, kv.lease) == (b"first", first.lease_id)

    await first.revoke()
    await asyncio.wait_for(waiting, 10)
    kv = await only_kv(etcd, KEY)
    assert kv is not None and (kv.value, kv.lease) == (b"second", second.lease_id)
    await second.revoke()


async def test_lost_lease_calls_on_lost(etcd: aetcd.Client) -> None:
    lost = asyncio.Event()
    ann = Announcement(etcd, KEY, b"v", ttl=2, on_lost=lost.set)
    await ann.announce()
    await etcd.revoke_lease(ann.lease_id)
    await asyncio.wait_for(lost.wait(), 10)
    assert ann.lost
    assert await only_kv(etcd, KEY) is None
    await ann.revoke()


async def test_keep_alive_holds_key_past_its_ttl(etcd: aetcd.Client) -> None:
    async with Announcement(etcd, KEY, b"v", ttl=2) as ann:
        await asyncio.sleep(3)
        kv = await only_kv(etcd, KEY)
        assert kv is not None and (kv.value, kv.lease) == (b"v", ann.lease_id)
        assert not ann.lost
