"""Hints in Etcd: GetHints reads, pick order, guarded primary writes and backup rotation."""

from __future__ import annotations

import asyncio
import socket

import aetcd
import pytest

from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.recoverylog import hints_store
from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.consumer.recoverylog.hints import decode_hints, encode_hints
from gazette_core.consumer.recoverylog.hints_store import (
    AssignmentChangedError,
    AssignmentGuard,
    StoredHintsError,
    get_hints,
    pick_hints,
    rotate_backup_hints,
    store_primary_hints,
)
from gazette_core.keyspace.etcd_util import CHANNEL_OPTIONS
from tests.consumer.api.specs import hints, shard

SPEC = shard("group/shard-1", log_prefix="logs", hint_prefix="/hints", hint_backups=3)
LOG = "logs/group/shard-1"
PRIMARY = "/hints/group/shard-1.primary"
BACKUPS = [f"/hints/group/shard-1.backup.{i}" for i in range(3)]
ASSIGN = "/consumers/app/assign/group/shard-1#zone#cons-1#0"
RH = cpb.GetHintsResponse.ResponseHints


async def _assign(etcd: aetcd.Client) -> int:
    await etcd.put(ASSIGN.encode(), b"")
    got = await etcd.get(ASSIGN.encode())
    assert got is not None
    return int(got.create_revision)


async def _value(etcd: aetcd.Client, key: str) -> rpb.FSMHints | None:
    got = await etcd.get(key.encode())
    return decode_hints(got.value) if got is not None else None


async def test_get_hints_of_empty_keys(etcd: aetcd.Client) -> None:
    resp = await get_hints(etcd, SPEC)
    assert resp.status == cpb.OK
    assert resp.header.etcd.revision > 0
    assert resp.primary_hints == RH()
    assert list(resp.backup_hints) == [RH(), RH(), RH()]
    assert pick_hints(resp, LOG) == rpb.FSMHints(log=LOG)


async def test_get_hints_reads_primary_and_backups_newest_first(etcd: aetcd.Client) -> None:
    await etcd.put(BACKUPS[0].encode(), encode_hints(hints(LOG, 5)))
    await etcd.put(BACKUPS[2].encode(), encode_hints(hints(LOG, 1)))
    resp = await get_hints(etcd, SPEC)
    assert resp.primary_hints == RH()
    assert list(resp.backup_hints) == [RH(hints=hints(LOG, 5)), RH(), RH(hints=hints(LOG, 1))]
    assert pick_hints(resp, LOG) == hints(LOG, 5)
    # Binary protobuf values are read too; primary hints win the pick.
    await etcd.put(PRIMARY.encode(), hints(LOG, 9).SerializeToString())
    resp = await get_hints(etcd, SPEC)
    assert resp.primary_hints == RH(hints=hints(LOG, 9))
    assert pick_hints(resp, LOG) == hints(LOG, 9)


def test_pick_hints_skips_empty_backups() -> None:
    resp = cpb.GetHintsResponse(backup_hints=[RH(), RH(hints=hints(LOG, 3)), RH(hints=hints(LOG))])
    assert pick_hints(resp, LOG) == hints(LOG, 3)


async def test_get_hints_rejects_another_log(etcd: aetcd.Client) -> None:
    await etcd.put(BACKUPS[1].encode(), encode_hints(hints("logs/other-shard")))
    with pytest.raises(StoredHintsError) as info:
        await get_hints(etcd, SPEC)
    assert str(info.value) == (
        f'hints at "{BACKUPS[1]}" are invalid: log: expected the shard\'s recovery log '
        f'"{LOG}" (got "logs/other-shard")'
    )


async def test_get_hints_rejects_invalid_hints(etcd: aetcd.Client) -> None:
    bad = hints(LOG)
    bad.live_nodes[0].segments[0].author = 0
    await etcd.put(PRIMARY.encode(), encode_hints(bad))
    with pytest.raises(StoredHintsError) as info:
        await get_hints(etcd, SPEC)
    assert str(info.value) == (
        f'hints at "{PRIMARY}" are invalid: live_nodes[0].segments[0].author: must not be zero'
    )


async def test_store_primary_hints_guarded_by_create_revision(etcd: aetcd.Client) -> None:
    revision = await _assign(etcd)
    assert await store_primary_hints(etcd, SPEC, hints(LOG, 4), AssignmentGuard(ASSIGN, revision))
    assert await _value(etcd, PRIMARY) == hints(LOG, 4)
    # The assignment is re-created (a new primary incarnation): the old one may not write.
    await etcd.delete(ASSIGN.encode())
    await _assign(etcd)
    with pytest.raises(AssignmentChangedError) as info:
        await store_primary_hints(etcd, SPEC, hints(LOG, 8), AssignmentGuard(ASSIGN, revision))
    assert str(info.value) == (
        f"shard group/shard-1: assignment \"{ASSIGN}\" changed; primary hints not stored"
    )
    assert await _value(etcd, PRIMARY) == hints(LOG, 4)


async def test_rotation_shifts_down_and_stops_at_first_empty_slot(etcd: aetcd.Client) -> None:
    revision = await _assign(etcd)
    assert await rotate_backup_hints(etcd, SPEC, hints(LOG, 1), AssignmentGuard(ASSIGN, revision))
    assert [await _value(etcd, k) for k in BACKUPS] == [hints(LOG, 1), None, None]
    assert await rotate_backup_hints(etcd, SPEC, hints(LOG, 2), AssignmentGuard(ASSIGN, revision))
    assert [await _value(etcd, k) for k in BACKUPS] == [hints(LOG, 2), hints(LOG, 1), None]
    # Slot 1 emptied by hand: the rotation stops there, leaving slot 2 alone.
    await etcd.put(BACKUPS[2].encode(), encode_hints(hints(LOG, 7)))
    await etcd.delete(BACKUPS[1].encode())
    assert await rotate_backup_hints(etcd, SPEC, hints(LOG, 3), AssignmentGuard(ASSIGN, revision))
    assert [await _value(etcd, k) for k in BACKUPS] == [hints(LOG, 3), hints(LOG, 2),
                                                       hints(LOG, 7)]
    # Full slots: the oldest falls off the end.
    assert await rotate_backup_hints(etcd, SPEC, hints(LOG, 4), AssignmentGuard(ASSIGN, revision))
    assert [await _value(etcd, k) for k in BACKUPS] == [hints(LOG, 4), hints(LOG, 3),
                                                       hints(LOG, 2)]


async def test_rotation_skips_foreign_logs_and_no_slots(etcd: aetcd.Client) -> None:
    revision = await _assign(etcd)
    guard = AssignmentGuard(ASSIGN, revision)
    assert not await rotate_backup_hints(etcd, SPEC, hints("logs/other-shard"), guard)
    no_slots = shard("group/shard-1", log_prefix="logs", hint_prefix="/hints", hint_backups=0)
    assert not await rotate_backup_hints(etcd, no_slots, hints(LOG), guard)
    assert [await _value(etcd, k) for k in BACKUPS] == [None, None, None]


async def test_rotation_fails_when_assignment_changed(etcd: aetcd.Client) -> None:
    revision = await _assign(etcd)
    await etcd.delete(ASSIGN.encode())
    with pytest.raises(AssignmentChangedError):
        await rotate_backup_hints(etcd, SPEC, hints(LOG), AssignmentGuard(ASSIGN, revision))
    assert await _value(etcd, BACKUPS[0]) is None


async def test_rotation_retries_after_a_conflicting_write(
    etcd: aetcd.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    revision = await _assign(etcd)
    await etcd.put(BACKUPS[0].encode(), encode_hints(hints(LOG, 1)))
    real_txn = hints_store.etcd_util.txn
    calls = 0

    async def racing_txn(client, compare, success, failure=()):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        if calls == 2:  # between the read and the guarded write, another writer lands
            await etcd.put(BACKUPS[0].encode(), encode_hints(hints(LOG, 5)))
        return await real_txn(client, compare, success, failure)

    monkeypatch.setattr(hints_store.etcd_util, "txn", racing_txn)
    guard = AssignmentGuard(ASSIGN, revision)
    async with asyncio.timeout(10):
        assert await rotate_backup_hints(etcd, SPEC, hints(LOG, 9), guard)
    assert calls == 4  # read, failed write, read again, write
    assert [await _value(etcd, k) for k in BACKUPS] == [hints(LOG, 9), hints(LOG, 5), None]


async def test_store_primary_hints_only_logs_when_etcd_is_unavailable(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    down = aetcd.Client(host="127.0.0.1", port=port, options=CHANNEL_OPTIONS)
    try:
        async with asyncio.timeout(30):
            stored = await store_primary_hints(down, SPEC, hints(LOG), AssignmentGuard(ASSIGN, 1))
    finally:
        await down.close()
    assert stored is False
    assert any(r.levelname == "WARNING" and "storing primary hints: etcd is unavailable"
               in r.getMessage() for r in caplog.records)
