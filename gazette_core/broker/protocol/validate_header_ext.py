"""Validation of process identity, BrokerSpec, Route and Header.

Go clients validate every response Header, so a broker must send real Etcd
values (all four non-zero) and members sorted by (zone, suffix). Import
through `validate_ext`.
"""

from __future__ import annotations

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.names_ext import quote, validate_endpoint, validate_token
from gazette_core.broker.protocol.route_ext import process_id_is_zero, process_id_str
from gazette_core.broker.protocol.validate_spec_ext import within
from gazette_core.errors import ValidationError

MIN_ZONE_LEN, MAX_ZONE_LEN = 1, 32
MIN_SUFFIX_LEN, MAX_SUFFIX_LEN = 4, 128
MAX_JOURNAL_LIMIT = 1 << 17


def validate_process_id(process_id: pb.ProcessSpec.ID) -> None:
    """Zone: 1-32 token chars; suffix: 4-128 token chars."""
    validate_token(process_id.zone, MIN_ZONE_LEN, MAX_ZONE_LEN, "zone")
    validate_token(process_id.suffix, MIN_SUFFIX_LEN, MAX_SUFFIX_LEN, "suffix")


def validate_process_spec(spec: pb.ProcessSpec) -> None:
    """A valid ID and an absolute endpoint URL with a host."""
    with within("id"):
        validate_process_id(spec.id)
    validate_endpoint(spec.endpoint, "endpoint")


def validate_broker_spec(spec: pb.BrokerSpec) -> None:
    """A valid ProcessSpec and `journal_limit <= 131072`."""
    with within("process_spec"):
        validate_process_spec(spec.process_spec)
    if spec.journal_limit > MAX_JOURNAL_LIMIT:
        raise ValidationError(
            "journal_limit",
            f"expected journal_limit <= {MAX_JOURNAL_LIMIT} (got {spec.journal_limit})",
        )


def _validate_members(route: pb.Route) -> None:
    for index, member in enumerate(route.members):
        with within(f"members[{index}]"):
            validate_process_id(member)
        prev = route.members[index - 1] if index else None
        if prev is not None and (prev.zone, prev.suffix) >= (member.zone, member.suffix):
            raise ValidationError(
                f"members[{index}]",
                f"members must be unique and sorted by (zone, suffix): "
                f"{quote(process_id_str(prev))} is not before {quote(process_id_str(member))}",
            )


def validate_route(route: pb.Route) -> None:
    """Sorted valid members, `-1 <= primary < len(members)`, endpoints empty or aligned."""
    _validate_members(route)
    count = len(route.members)
    if not -1 <= route.primary < count:
        raise ValidationError("primary", f"expected -1 <= primary < {count} (got {route.primary})")
    if route.endpoints and len(route.endpoints) != count:
        raise ValidationError(
            "endpoints",
            f"expected no endpoints or one per member ({count}) (got {len(route.endpoints)})",
        )
    for index, endpoint in enumerate(route.endpoints):
        if endpoint:
            validate_endpoint(endpoint, f"endpoints[{index}]")


def validate_header_etcd(etcd: pb.Header.Etcd) -> None:
    """cluster_id, member_id and raft_term non-zero; revision positive."""
    for field in ("cluster_id", "member_id", "raft_term"):
        if getattr(etcd, field) == 0:
            raise ValidationError(field, f"expected {field} != 0 (got 0)")
    if etcd.revision <= 0:
        raise ValidationError("revision", f"expected revision > 0 (got {etcd.revision})")


def validate_header(header: pb.Header) -> None:
    """process_id (if set), route and Etcd fields of a Header."""
    if not process_id_is_zero(header.process_id):
        with within("process_id"):
            validate_process_id(header.process_id)
    with within("route"):
        validate_route(header.route)
    with within("etcd"):
        validate_header_etcd(header.etcd)
