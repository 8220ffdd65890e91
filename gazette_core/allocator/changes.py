"""Assignment changes planned by the allocator, each with its own etcd guards.

A change is applied only if the keys it was planned from are unchanged, so a
stale plan fails its transaction instead of clobbering newer state.
"""

from __future__ import annotations

from dataclasses import dataclass

from aetcd import rpc

from gazette_core.keyspace import etcd_util


@dataclass(frozen=True)
class Add:
    """Create assignment `key` (empty value) under the target member's lease."""

    key: str
    member_key: str
    member_mod_revision: int
    lease: int

    def compares(self) -> list[rpc.Compare]:
        return [
            etcd_util.cmp_mod_revision(self.member_key, self.member_mod_revision),
            etcd_util.cmp_create_revision(self.key, 0),
        ]

    def ops(self) -> list[rpc.RequestOp]:
        return [etcd_util.put_op(self.key, b"", self.lease)]


@dataclass(frozen=True)
class Remove:
    """Delete assignment `key`, guarded by it and by `guard_key`'s mod revision (0 = absent)."""

    key: str
    mod_revision: int
    guard_key: str
    guard_mod_revision: int

    def compares(self) -> list[rpc.Compare]:
        return [
            etcd_util.cmp_mod_revision(self.key, self.mod_revision),
            etcd_util.cmp_mod_revision(self.guard_key, self.guard_mod_revision),
        ]

    def ops(self) -> list[rpc.RequestOp]:
        return [etcd_util.delete_op(self.key)]


@dataclass(frozen=True)
class Move:
    """Re-key an assignment to another slot, keeping its value and lease."""

    key: str
    mod_revision: int
    new_key: str
    value: bytes
    lease: int

    def compares(self) -> list[rpc.Compare]:
        return [
            etcd_util.cmp_mod_revision(self.key, self.mod_revision),
            etcd_util.cmp_create_revision(self.new_key, 0),
        ]

    def ops(self) -> list[rpc.RequestOp]:
        return [
            etcd_util.delete_op(self.key),
            etcd_util.put_op(self.new_key, self.value, self.lease),
        ]


Change = Add | Remove | Move
