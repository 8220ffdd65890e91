"""Shard Apply: one guarded Etcd transaction, primary hints, recovery-log checks, statuses."""

from __future__ import annotations

import aetcd
import grpc
import pytest

from gazette_core.allocator import keys
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.protocol.labels_ext import CONTENT_TYPE, CONTENT_TYPE_RECOVERY_LOG
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.consumer.recoverylog.hints import decode_hints
from gazette_core.testing.broker import journal_spec
from tests.consumer.api.host import ROOT, Process, serving
from tests.consumer.api.specs import hints, shard

LOG_PREFIX = "recovery/logs"
Change = cpb.ApplyRequest.Change


async def _logs(stub: pb_grpc.JournalStub, *names: str,
                content_type: str = CONTENT_TYPE_RECOVERY_LOG) -> None:
    specs = [journal_spec(f"{LOG_PREFIX}/{n}", labels=((CONTENT_TYPE, content_type),))
             for n in names]
    resp = await stub.Apply(pb.ApplyRequest(changes=[pb.ApplyRequest.Change(upsert=s)
                                                     for s in specs]))
    assert resp.status == pb.OK


async def _apply(proc: Process, *changes: Change) -> cpb.ApplyResponse:
    resp: cpb.ApplyResponse = await proc.stub.Apply(cpb.ApplyRequest(changes=changes))
    return resp


def _header(proc: Process, resp: cpb.ApplyResponse) -> pb.Header:
    """The unrouted header of `proc`, with the etcd part the response reports."""
    assert resp.header.etcd.cluster_id == proc.host.keyspace.header.cluster_id
    assert resp.header.etcd.revision > 0
    return pb.Header(process_id=proc.host.process_id, route=pb.Route(primary=-1),
                     etcd=resp.header.etcd)


def _unrouted(proc: Process) -> pb.Header:
    """The unrouted header of `proc` as of its KeySpace (nothing was written)."""
    return pb.Header(process_id=proc.host.process_id, route=pb.Route(primary=-1),
                     etcd=proc.host.keyspace.header)


async def _mod_revision(etcd: aetcd.Client, key: str) -> int:
    got = await etcd.get(key.encode())
    return int(got.mod_revision) if got is not None else 0


async def test_apply_creates_updates_and_deletes(etcd: aetcd.Client,
                                                 stub: pb_grpc.JournalStub) -> None:
    await _logs(stub, "shard-one", "shard-two")
    async with serving(etcd, ["cons-a"], journals=stub) as (proc,):
        one, two = shard("shard-one", log_prefix=LOG_PREFIX), shard("shard-two",
                                                                   log_prefix=LOG_PREFIX)
        resp = await _apply(proc, Change(upsert=one), Change(upsert=two))
        assert resp == cpb.ApplyResponse(status=cpb.OK, header=_header(proc, resp))
        # The reply waited for the local KeySpace to see the change.
        kv = proc.host.keyspace.get(keys.item_key(ROOT, "shard-one"))
        assert kv is not None and kv.decoded == one
        assert resp.header.etcd.revision == kv.mod_revision
        # Stored as binary protobuf.
        got = await etcd.get(keys.item_key(ROOT, "shard-one").encode())
        assert got is not None and cpb.ShardSpec.FromString(got.value) == one

        one.hot_standbys = 1
        resp = await _apply(proc, Change(upsert=one, expect_mod_revision=kv.mod_revision))
        assert resp.status == cpb.OK
        revision = await _mod_revision(etcd, keys.item_key(ROOT, "shard-two"))
        resp = await _apply(proc, Change(delete="shard-two", expect_mod_revision=revision))
        assert resp.status == cpb.OK
        assert proc.host.keyspace.get(keys.item_key(ROOT, "shard-two")) is None
        assert await _mod_revision(etcd, keys.item_key(ROOT, "shard-two")) == 0


async def test_apply_compare_failures(etcd: aetcd.Client, stub: pb_grpc.JournalStub) -> None:
    await _logs(stub, "shard-one")
    async with serving(etcd, ["cons-a"], journals=stub) as (proc,):
        one = shard("shard-one", log_prefix=LOG_PREFIX)
        assert (await _apply(proc, Change(upsert=one))).status == cpb.OK
        # Creating again (expect 0) and updating at a stale revision both fail whole.
        for change in (Change(upsert=one), Change(upsert=one, expect_mod_revision=1)):
            other = shard("shard-new", log_prefix="", hint_prefix="")
            resp = await _apply(proc, Change(upsert=other), change)
            assert resp == cpb.ApplyResponse(status=cpb.ETCD_TRANSACTION_FAILED,
                                              header=_unrouted(proc))
            assert await _mod_revision(etcd, keys.item_key(ROOT, "shard-new")) == 0
        resp = await _apply(proc, Change(delete="shard-one", expect_mod_revision=1))
        assert resp == cpb.ApplyResponse(status=cpb.ETCD_TRANSACTION_FAILED,
                                          header=_unrouted(proc))
        # -1 skips the check.
        one.disable = True
        assert (await _apply(proc, Change(upsert=one, expect_mod_revision=-1))).status == cpb.OK
        resp = await _apply(proc, Change(delete="shard-one", expect_mod_revision=-1))
        assert resp.status == cpb.OK


async def test_apply_writes_primary_hints_as_json(etcd: aetcd.Client,
                                                  stub: pb_grpc.JournalStub) -> None:
    await _logs(stub, "shard-one")
    async with serving(etcd, ["cons-a"], journals=stub) as (proc,):
        one = shard("shard-one", log_prefix=LOG_PREFIX, hint_prefix="/hints/x")
        given = hints(f"{LOG_PREFIX}/shard-one", 3)
        assert (await _apply(proc, Change(upsert=one, primary_hints=given))).status == cpb.OK
        got = await etcd.get(b"/hints/x/shard-one.primary")
        assert got is not None and got.value.startswith(b'{"log":')
        assert decode_hints(got.value) == given
        # A delete leaves the hints alone.
        assert (await _apply(proc, Change(delete="shard-one", expect_mod_revision=-1))
                ).status == cpb.OK
        assert await etcd.get(b"/hints/x/shard-one.primary") is not None


def _unfollowable_fnode() -> rpb.FSMHints:
    """Hints of shard-000 whose Fnode 5 starts with a segment at seq_no 1."""
    given = hints(f"{LOG_PREFIX}/shard-000", 1)
    given.live_nodes[0].fnode = 5
    return given


def _ends_in_another_log() -> rpb.FSMHints:
    """Hints of shard-000 whose only segment is in another log."""
    given = hints(f"{LOG_PREFIX}/shard-000", 1)
    given.live_nodes[0].segments[0].log = "other/log"
    return given


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (Change(), "changes[0]: expected exactly one of upsert or delete"),
        (Change(upsert=shard("abc")),
         'changes[0].upsert.id: invalid length of "abc": expected 4 <= length <= 512 bytes '
         "(got 3)"),
        (Change(upsert=shard(), expect_mod_revision=-2),
         "changes[0].expect_mod_revision: expected expect_mod_revision >= 0 or -1 with an "
         "upsert (got -2)"),
        (Change(delete="shard-one"),
         "changes[0].expect_mod_revision: expected expect_mod_revision > 0 or -1 with a "
         "delete (got 0)"),
        (Change(delete="shard-one", expect_mod_revision=-1, primary_hints=hints("a/log")),
         "changes[0].primary_hints: unexpected primary_hints with a delete"),
        (Change(upsert=shard(), primary_hints=hints("recovery/logs/other")),
         'changes[0].primary_hints.log: expected the shard\'s recovery log '
         '"recovery/logs/shard-000" (got "recovery/logs/other")'),
        (Change(upsert=shard(log_prefix="", hint_prefix=""), primary_hints=hints("a/log")),
         "changes[0].primary_hints: unexpected primary_hints for a shard without a recovery "
         "log"),
        (Change(upsert=shard(hint_backups=2147483647)),
         "changes[0].upsert.hint_backups: expected hint_backups <= 64 (got 2147483647)"),
        (Change(upsert=shard(hot_standbys=4294967295)),
         "changes[0].upsert.hot_standbys: expected hot_standbys <= 1024 (got 4294967295)"),
        (Change(upsert=shard(ring_buffer_size=4294967295)),
         "changes[0].upsert.ring_buffer_size: expected ring_buffer_size <= 1048576 "
         "(got 4294967295)"),
        (Change(upsert=shard(read_channel_size=4294967295)),
         "changes[0].upsert.read_channel_size: expected read_channel_size <= 1048576 "
         "(got 4294967295)"),
        # Hints GetHints would refuse (the shard could never recover from them).
        (Change(upsert=shard(), primary_hints=_unfollowable_fnode()),
         "changes[0].primary_hints.live_nodes[0].segments: first segment must start at "
         "seq_no 5 (the Fnode)"),
        (Change(upsert=shard(), primary_hints=_ends_in_another_log()),
         "changes[0].primary_hints.live_nodes: last segment is in log 'other/log', not hints "
         "log 'recovery/logs/shard-000'"),
    ],
)
async def test_apply_invalid_requests(etcd: aetcd.Client, change: Change, message: str) -> None:
    async with serving(etcd, ["cons-a"]) as (proc,):
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await _apply(proc, change)
        assert (info.value.code(), info.value.details()) == (grpc.StatusCode.INVALID_ARGUMENT,
                                                             message)


async def test_apply_refuses_a_shard_changed_twice(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a"]) as (proc,):
        plain = shard("shard-one", log_prefix="", hint_prefix="")
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await _apply(proc, Change(upsert=plain), Change(delete="shard-one",
                                                            expect_mod_revision=-1))
        assert info.value.details() == (
            'changes[1].delete: shard "shard-one" is already changed by changes[0]')


async def test_apply_verifies_the_recovery_log(etcd: aetcd.Client,
                                               stub: pb_grpc.JournalStub) -> None:
    await _logs(stub, "typed-wrong", content_type="application/x-ndjson")
    async with serving(etcd, ["cons-a"], journals=stub) as (proc,):
        for shard_id, message in [
            ("missing", f'recovery log journal "{LOG_PREFIX}/missing" does not exist'),
            ("typed-wrong", f'recovery log journal "{LOG_PREFIX}/typed-wrong" has content-type '
                            '"application/x-ndjson", expected '
                            '"application/x-gazette-recoverylog"'),
        ]:
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await _apply(proc, Change(upsert=shard(shard_id, log_prefix=LOG_PREFIX)))
            assert (info.value.code(), info.value.details()) == (
                grpc.StatusCode.INVALID_ARGUMENT, f"changes[0].upsert: {message}")
            assert await _mod_revision(etcd, keys.item_key(ROOT, shard_id)) == 0


async def test_apply_refuses_more_changes_than_etcd_takes(etcd: aetcd.Client) -> None:
    async with serving(etcd, ["cons-a"]) as (proc,):
        deletes = [Change(delete=f"shard-{i:04d}", expect_mod_revision=-1) for i in range(1000)]
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await _apply(proc, *deletes)
        assert (info.value.code(), info.value.details()) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "changes: Apply has 1000 changes, needing 1000 Etcd operations and 0 compares; "
            "Etcd takes at most 128 of each in a transaction (its --max-txn-ops default); "
            "split it into Applies of at most 64 changes (gazctl shards apply --max-txn-size)")
        # As many as Etcd takes are applied.
        assert (await _apply(proc, *deletes[:128])).status == cpb.OK


async def test_apply_larger_than_etcd_takes_says_which_limit(etcd: aetcd.Client,
                                                            stub: pb_grpc.JournalStub) -> None:
    await _logs(stub, "shard-one")
    # 100,000 segments: a valid ~2.4 MB request, past Etcd's 1.5 MiB --max-request-bytes.
    segments = [rpb.Segment(author=7, first_seq_no=2 * i + 1, last_seq_no=2 * i + 2,
                            first_offset=100 * i, last_offset=100 * i + 50)
                for i in range(100_000)]
    given = rpb.FSMHints(log=f"{LOG_PREFIX}/shard-one",
                         live_nodes=[rpb.FnodeSegments(fnode=1, segments=segments)])
    one = shard("shard-one", log_prefix=LOG_PREFIX, hint_prefix="/hints/x")
    async with serving(etcd, ["cons-a"], journals=stub) as (proc,):
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await _apply(proc, Change(upsert=one, primary_hints=given))
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert info.value.details().startswith("Etcd refused the Apply of 1 changes: ")
        assert "--max-request-bytes" in info.value.details()
        assert await _mod_revision(etcd, keys.item_key(ROOT, "shard-one")) == 0
