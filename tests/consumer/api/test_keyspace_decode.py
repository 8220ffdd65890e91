"""Consumer value decoding (binary protos, ids matching keys) and shard consistency."""

from __future__ import annotations

import pytest

from gazette_core.allocator.keys import AssignmentKV, parse_assign_key
from gazette_core.consumer.keyspace_decode import consumer_decoder, shard_consistent
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.keyspace.keyspace import KeyValue
from tests.consumer.api.specs import consumer, shard

R = "/gazette/consumers/app"
RS = cpb.ReplicaStatus


def test_decodes_each_kind() -> None:
    decode = consumer_decoder(R)
    spec = shard("group/shard-1")
    assert decode(f"{R}/items/group/shard-1", spec.SerializeToString()) == spec
    member = consumer("zone", "cons-1")
    assert decode(f"{R}/members/zone#cons-1", member.SerializeToString()) == member
    key = f"{R}/assign/group/shard-1#zone#cons-1#0"
    assert decode(key, b"") == RS(code=RS.IDLE)
    status = RS(code=RS.FAILED, errors=["x"])
    assert decode(key, status.SerializeToString()) == status


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (
            f"{R}/items/other-1",
            shard("shard-000").SerializeToString(),
            f"item '{R}/items/other-1': ShardSpec id 'shard-000' doesn't match its key",
        ),
        (
            f"{R}/items/shard-000",
            shard("shard-000", hint_backups=-1).SerializeToString(),
            f"item '{R}/items/shard-000': hint_backups: expected hint_backups >= 0 (got -1)",
        ),
        (
            f"{R}/items/shard-000",
            b"\xff\xff",
            f"item '{R}/items/shard-000': invalid ShardSpec: Error parsing message "
            "with type 'consumer.ShardSpec': Wire format was corrupt",
        ),
        (
            f"{R}/members/zone#cons-2",
            consumer("zone", "cons-1").SerializeToString(),
            f"member '{R}/members/zone#cons-2': ConsumerSpec id ('zone', 'cons-1') doesn't match "
            "its key",
        ),
        (
            f"{R}/assign/shard-000#zone#cons-1#0",
            RS(code=RS.FAILED).SerializeToString(),
            f"assignment '{R}/assign/shard-000#zone#cons-1#0': errors: expected errors with "
            "code FAILED",
        ),
        (
            f"{R}/assign/shard-000#zone#cons-1",
            b"",
            f"assignment key '{R}/assign/shard-000#zone#cons-1' is not "
            "<item>#<zone>#<suffix>#<slot>",
        ),
        (f"{R}/other/x", b"", f"unexpected key '{R}/other/x' under '{R}'"),
    ],
)
def test_rejects_bad_values(key: str, value: bytes, message: str) -> None:
    with pytest.raises(ValueError) as info:
        consumer_decoder(R)(key, value)
    assert str(info.value) == message


def _entry(suffix: str, slot: int, status: cpb.ReplicaStatus) -> AssignmentKV:
    key = f"{R}/assign/shard-000#zone#{suffix}#{slot}"
    raw = status.SerializeToString()
    kv = KeyValue(key, raw, consumer_decoder(R)(key, raw), 1, 1, 1, 0)
    return AssignmentKV(parse_assign_key(R, key), kv)


@pytest.mark.parametrize(
    ("primary", "standby", "consistent"),
    [
        (RS.PRIMARY, RS.IDLE, False),
        (RS.PRIMARY, RS.BACKFILL, False),
        (RS.PRIMARY, RS.STANDBY, True),
        (RS.PRIMARY, RS.FAILED, False),
        (RS.FAILED, RS.FAILED, True),
        (RS.FAILED, RS.BACKFILL, False),
        (RS.IDLE, RS.STANDBY, True),
    ],
)
def test_shard_consistent(primary: int, standby: int, consistent: bool) -> None:
    def status(code: int) -> cpb.ReplicaStatus:
        return RS(code=code, errors=["e"] if code == RS.FAILED else [])  # type: ignore[arg-type]

    entries = [_entry("a", 0, status(primary)), _entry("b", 1, status(standby))]
    assert shard_consistent(entries[1], entries) is consistent
    assert shard_consistent(entries[0], entries) is (primary in (RS.PRIMARY, RS.FAILED))


def test_standby_without_primary_is_consistent_only_when_ready() -> None:
    ready = _entry("b", 1, RS(code=RS.STANDBY))
    assert shard_consistent(ready, [ready])
    failed = _entry("b", 1, RS(code=RS.FAILED, errors=["e"]))
    assert not shard_consistent(failed, [failed])
