"""Decoding of a broker cluster's Etcd values for its KeySpace.

Items decode to validated JournalSpecs, members to BrokerSpecs, and
assignments stay raw bytes (empty, or a marshalled Route written by the
primary). Anything that fails raises ValueError, so the KeySpace logs and
ignores the key.
"""

from __future__ import annotations

from collections.abc import Callable

from gazette_core.allocator import keys
from gazette_core.allocator.value_decode import decode_value
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.validate_ext import validate_journal_spec


def _decode_journal_spec(root: str, key: str, value: bytes) -> pb.JournalSpec:
    name = keys.parse_item_key(root, key)
    spec = decode_value("item", key, value, pb.JournalSpec, validate_journal_spec)
    if spec.name != name:
        raise ValueError(f"item {key!r}: JournalSpec name {spec.name!r} doesn't match its key")
    return spec


def _decode_broker_spec(root: str, key: str, value: bytes) -> pb.BrokerSpec:
    zone, suffix = keys.parse_member_key(root, key)
    spec = decode_value("member", key, value, pb.BrokerSpec)
    got = (spec.process_spec.id.zone, spec.process_spec.id.suffix)
    if got != (zone, suffix):
        raise ValueError(f"member {key!r}: BrokerSpec id {got!r} doesn't match its key")
    return spec


def broker_decoder(root: str) -> Callable[[str, bytes], object]:
    """A KeySpace decoder for the broker keys under `root`."""

    def decode(key: str, value: bytes) -> object:
        if key.startswith(root + keys.ITEMS):
            return _decode_journal_spec(root, key, value)
        if key.startswith(root + keys.MEMBERS):
            return _decode_broker_spec(root, key, value)
        if key.startswith(root + keys.ASSIGN):
            keys.parse_assign_key(root, key)
            return value
        raise ValueError(f"unexpected key {key!r} under {root!r}")

    return decode
