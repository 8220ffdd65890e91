"""Validation of the Shard service's request and response messages.

Like the broker's `validate_ext`, each function raises ValidationError whose
path is the dotted field path from the message root
(`changes[1].upsert.hint_backups`).
"""

from __future__ import annotations

from gazette_core.broker.protocol.labels_ext import validate_selector
from gazette_core.broker.protocol.names_ext import quote, validate_journal_name
from gazette_core.broker.protocol.validate_header_ext import validate_header, validate_route
from gazette_core.broker.protocol.validate_spec_ext import within
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol.shard_spec_ext import (
    recovery_log,
    validate_shard_id,
    validate_shard_spec,
)
from gazette_core.consumer.protocol.status_ext import validate_replica_status
from gazette_core.consumer.recoverylog.hints import validate_shard_hints
from gazette_core.errors import ValidationError


def validate_status(status: int, path: str = "status") -> None:
    """A known Shard service Status."""
    if status not in cpb.Status.values():
        raise ValidationError(path, f"invalid status {status}")


def validate_list_request(msg: cpb.ListRequest) -> None:
    """A valid selector (the `id` meta-label is allowed)."""
    validate_selector(msg.selector, "selector")


def validate_apply_change(msg: cpb.ApplyRequest.Change) -> None:
    """Exactly one of upsert/delete, a fitting `expect_mod_revision`, hints only with upsert."""
    if msg.HasField("upsert") == bool(msg.delete):
        raise ValidationError("", "expected exactly one of upsert or delete")
    expect = msg.expect_mod_revision
    if msg.HasField("upsert"):
        with within("upsert"):
            validate_shard_spec(msg.upsert)
        if expect < -1:
            raise ValidationError(
                "expect_mod_revision",
                f"expected expect_mod_revision >= 0 or -1 with an upsert (got {expect})",
            )
        if msg.HasField("primary_hints"):
            if not msg.upsert.recovery_log_prefix:
                raise ValidationError(
                    "primary_hints", "unexpected primary_hints for a shard without a recovery log"
                )
            with within("primary_hints"):
                # GetHints applies the same check: hints it would refuse leave
                # the shard unable to recover.
                validate_shard_hints(msg.primary_hints, recovery_log(msg.upsert))
        return
    validate_shard_id(msg.delete, "delete")
    if expect <= 0 and expect != -1:
        raise ValidationError(
            "expect_mod_revision",
            f"expected expect_mod_revision > 0 or -1 with a delete (got {expect})",
        )
    if msg.HasField("primary_hints"):
        raise ValidationError("primary_hints", "unexpected primary_hints with a delete")


def validate_apply_request(msg: cpb.ApplyRequest) -> None:
    """Every change valid, and no shard changed twice."""
    seen: dict[str, int] = {}
    for index, change in enumerate(msg.changes):
        with within(f"changes[{index}]"):
            validate_apply_change(change)
        upsert = change.HasField("upsert")
        shard = change.upsert.id if upsert else change.delete
        if shard in seen:
            raise ValidationError(
                f"changes[{index}].{'upsert.id' if upsert else 'delete'}",
                f"shard {quote(shard)} is already changed by changes[{seen[shard]}]",
            )
        seen[shard] = index


def validate_stat_request(msg: cpb.StatRequest) -> None:
    """Optional header, a shard id, and journal names with offsets >= 0."""
    if msg.HasField("header"):
        with within("header"):
            validate_header(msg.header)
    validate_shard_id(msg.shard, "shard")
    for journal, offset in sorted(msg.read_through.items()):
        validate_journal_name(journal, f"read_through[{journal}]")
        if offset < 0:
            raise ValidationError(
                f"read_through[{journal}]", f"expected offset >= 0 (got {offset})"
            )


def validate_get_hints_request(msg: cpb.GetHintsRequest) -> None:
    """A shard id."""
    validate_shard_id(msg.shard, "shard")


def validate_unassign_request(msg: cpb.UnassignRequest) -> None:
    """At least one shard, each a valid id."""
    if not msg.shards:
        raise ValidationError("shards", "expected at least one shard")
    for index, shard in enumerate(msg.shards):
        validate_shard_id(shard, f"shards[{index}]")


def validate_list_response_shard(msg: cpb.ListResponse.Shard) -> None:
    """A valid spec, `mod_revision > 0`, a route, and one status per route member."""
    with within("spec"):
        validate_shard_spec(msg.spec)
    if msg.mod_revision <= 0:
        raise ValidationError("mod_revision", f"expected mod_revision > 0 (got {msg.mod_revision})")
    with within("route"):
        validate_route(msg.route)
    if len(msg.status) != len(msg.route.members):
        raise ValidationError(
            "status",
            f"expected one status per route member ({len(msg.route.members)}, "
            f"got {len(msg.status)})",
        )
    for index, status in enumerate(msg.status):
        validate_replica_status(status, f"status[{index}]")
