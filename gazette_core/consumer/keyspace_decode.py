"""Decoding of a consumer group's Etcd values for its KeySpace, and shard consistency.

Items decode to validated ShardSpecs (whose id must match the key), members
to ConsumerSpecs, and assignments to ReplicaStatus (an empty value is IDLE).
All three are binary protobuf. Anything that fails raises ValueError, so the
KeySpace logs and ignores the key.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gazette_core.allocator import keys
from gazette_core.allocator.keys import AssignmentKV
from gazette_core.allocator.value_decode import decode_value
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol.shard_spec_ext import (
    validate_consumer_spec,
    validate_shard_spec,
)
from gazette_core.consumer.protocol.status_ext import validate_replica_status


def _decode_shard_spec(root: str, key: str, value: bytes) -> cpb.ShardSpec:
    shard = keys.parse_item_key(root, key)
    spec = decode_value("item", key, value, cpb.ShardSpec, validate_shard_spec)
    if spec.id != shard:
        raise ValueError(f"item {key!r}: ShardSpec id {spec.id!r} doesn't match its key")
    return spec


def _decode_consumer_spec(root: str, key: str, value: bytes) -> cpb.ConsumerSpec:
    zone, suffix = keys.parse_member_key(root, key)
    spec = decode_value("member", key, value, cpb.ConsumerSpec, validate_consumer_spec)
    got = (spec.process_spec.id.zone, spec.process_spec.id.suffix)
    if got != (zone, suffix):
        raise ValueError(f"member {key!r}: ConsumerSpec id {got!r} doesn't match its key")
    return spec


def decode_replica_status(key: str, value: bytes) -> cpb.ReplicaStatus:
    """The ReplicaStatus of an assignment value (empty: IDLE)."""
    return decode_value("assignment", key, value, cpb.ReplicaStatus, validate_replica_status)


def consumer_decoder(root: str) -> Callable[[str, bytes], object]:
    """A KeySpace decoder for the consumer group keys under `root` (no trailing "/")."""

    def decode(key: str, value: bytes) -> object:
        if key.startswith(root + keys.ASSIGN):
            keys.parse_assign_key(root, key)
            return decode_replica_status(key, value)
        if key.startswith(root + keys.ITEMS):
            return _decode_shard_spec(root, key, value)
        if key.startswith(root + keys.MEMBERS):
            return _decode_consumer_spec(root, key, value)
        raise ValueError(f"unexpected key {key!r} under {root!r}")

    return decode


def replica_status(entry: AssignmentKV) -> cpb.ReplicaStatus:
    """The decoded status of an assignment, decoding the raw value if needed."""
    decoded = entry.kv.decoded
    if isinstance(decoded, cpb.ReplicaStatus):
        return decoded
    return decode_replica_status(entry.kv.key, entry.kv.raw)


def shard_consistent(entry: AssignmentKV, assignments: Sequence[AssignmentKV]) -> bool:
    """STANDBY or PRIMARY, or FAILED while the primary (slot 0) has FAILED too.

    The allocator moves a shard's primary only onto a consistent replica, so
    an unrecovered standby never takes over; when the primary has failed, a
    failed standby counts so the shard can still be moved away.
    """
    try:
        code = replica_status(entry).code
        primary = next((a for a in assignments if a.slot == 0), None)
        primary_code = replica_status(primary).code if primary else cpb.ReplicaStatus.IDLE
    except ValueError:
        return False
    if code in (cpb.ReplicaStatus.STANDBY, cpb.ReplicaStatus.PRIMARY):
        return True
    return code == cpb.ReplicaStatus.FAILED and primary_code == cpb.ReplicaStatus.FAILED
