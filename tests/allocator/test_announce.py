"""Announcement against a real etcd: lease-bound key, guarded updates, waiting, revoke, loss."""

from __future__ import annotations

import asyncio

import aetcd
import pytest
from aetcd import rpc

from gazette_core.allocator.announce import Announcement, AnnouncementConflictError
from gazette_core.keyspace import etcd_util as eu
from gazette_core.testing.etcd import EtcdServer

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


# -- etcd outages (each test runs its own etcd, which it kills) -------------------------


async def test_keep_alive_rides_out_an_etcd_restart_within_the_ttl() -> None:
    """Keep-alives fail while etcd is down and are retried; once it is back the
    lease is refreshed before our clock says it ran out, so it is never lost."""
    with EtcdServer() as server:
        client = await eu.connect(server.endpoint)
        lost = asyncio.Event()
        ann = Announcement(client, KEY, b"v", ttl=4, on_lost=lost.set)
        await ann.announce()
        try:
            server.kill()
            await asyncio.sleep(0.5)
            await asyncio.to_thread(server.restart)
            await asyncio.sleep(4.5)  # past the TTL counted from before the outage
            assert not lost.is_set() and ann.alive
            kv = await only_kv(client, KEY)
            assert kv is not None and kv.lease == ann.lease_id
        finally:
            await ann.revoke()
            await client.close()


async def test_lease_is_lost_by_our_clock_while_etcd_stays_away() -> None:
    """With etcd gone, the lease counts as alive until one TTL after the last
    answered keep-alive was sent, and not a moment longer; revoking then only warns."""
    with EtcdServer() as server:
        client = await eu.connect(server.endpoint)
        lost = asyncio.Event()
        ann = Announcement(client, KEY, b"v", ttl=2, on_lost=lost.set)
        await ann.announce()
        try:
            loop = asyncio.get_running_loop()
            server.kill()
            killed = loop.time()
            assert ann.alive and ann.expires <= killed + 2
            async with asyncio.timeout(4):
                await lost.wait()
            assert loop.time() >= ann.expires and not ann.alive and ann.lost
        finally:
            await ann.revoke()  # etcd is gone: this must not raise
            await client.close()
