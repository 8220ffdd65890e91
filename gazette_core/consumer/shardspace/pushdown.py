"""Push-down: a shard set's full per-shard specs, and the Apply request of them.

Each shard takes from `common` every value it leaves zero (see
`spec_fields.inherit`). Upserted specs are validated; errors carry the
shard's place in the set, e.g. `shards[2].hint_prefix`.
"""

from __future__ import annotations

from dataclasses import dataclass

from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol.shard_spec_ext import validate_shard_spec
from gazette_core.consumer.shardspace.model import ShardSet
from gazette_core.consumer.shardspace.spec_fields import inherit
from gazette_core.errors import ValidationError


@dataclass
class Leaf:
    """One shard of a pushed-down set; `path` locates it, e.g. `shards[2]`."""

    spec: cpb.ShardSpec
    delete: bool
    revision: int
    path: str


def push_down(shard_set: ShardSet) -> list[Leaf]:
    """The set's shards in order, each merged with `common`; ids must be set and unique."""
    leaves: list[Leaf] = []
    seen: set[str] = set()
    for index, entry in enumerate(shard_set.shards):
        path = f"shards[{index}]"
        if not entry.spec.id:
            raise ValidationError(f"{path}.id", "every shard needs an id")
        if entry.spec.id in seen:
            raise ValidationError(f"{path}.id", f"shard {entry.spec.id!r} appears twice")
        seen.add(entry.spec.id)
        leaves.append(Leaf(inherit(entry.spec, shard_set.common), entry.delete,
                           entry.revision, path))
    return leaves


def to_apply_request(leaves: list[Leaf]) -> cpb.ApplyRequest:
    """One change per shard: a delete or an upsert, expecting its revision."""
    return cpb.ApplyRequest(changes=[_change(leaf) for leaf in leaves])


def _change(leaf: Leaf) -> cpb.ApplyRequest.Change:
    shard = leaf.spec.id
    if leaf.delete:
        if leaf.revision == 0 or leaf.revision < -1:
            raise ValidationError(f"{leaf.path}.revision", f"deleting shard {shard!r} needs a "
                                  f"revision > 0 or -1 (got {leaf.revision})")
        return cpb.ApplyRequest.Change(delete=shard, expect_mod_revision=leaf.revision)
    if leaf.revision < -1:
        raise ValidationError(f"{leaf.path}.revision", f"shard {shard!r} needs a revision >= 0 "
                              f"or -1 (got {leaf.revision})")
    try:
        validate_shard_spec(leaf.spec)
    except ValidationError as err:
        raise err.prefixed(leaf.path) from err
    return cpb.ApplyRequest.Change(upsert=leaf.spec, expect_mod_revision=leaf.revision)
