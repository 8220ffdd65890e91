"""Validation of every broker protocol message: one `validate_<message>` each.

Each function raises ValidationError whose `path` is the dotted field path
from the message root (`changes[2].upsert.fragment.length`). Spec and header
validators live in `validate_spec_ext` / `validate_header_ext` and are
re-exported here, so callers need only this module.
"""

from __future__ import annotations

from google.protobuf.message import Message

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.durations_ext import (
    format_duration,
    to_nanos,
    validate_duration,
)
from gazette_core.broker.protocol.fragment_ext import validate_fragment
from gazette_core.broker.protocol.labels_ext import (
    META_PREFIX,
    validate_label_set,
    validate_selector,
)
from gazette_core.broker.protocol.names_ext import (
    MAX_JOURNAL_NAME_LEN,
    parse_url,
    quote,
    strip_meta,
    validate_journal_name,
    validate_path_component,
    validate_store_url,
)
from gazette_core.broker.protocol.validate_header_ext import (
    validate_broker_spec,
    validate_header,
    validate_header_etcd,
    validate_process_id,
    validate_process_spec,
    validate_route,
)
from gazette_core.broker.protocol.validate_spec_ext import (
    expect_range,
    validate_journal_spec,
    validate_journal_spec_fragment,
    validate_journal_spec_suspend,
    validate_media_type,
    validate_spec_labels,
    validate_status,
    within,
)
from gazette_core.errors import ValidationError

__all__ = [
    "strip_meta",
    "validate_append_request",
    "validate_append_response",
    "validate_apply_request",
    "validate_apply_request_change",
    "validate_apply_response",
    "validate_broker_spec",
    "validate_fragment",
    "validate_fragment_store_health_request",
    "validate_fragment_store_health_response",
    "validate_fragments_request",
    "validate_fragments_response",
    "validate_header",
    "validate_header_etcd",
    "validate_journal_name",
    "validate_journal_spec",
    "validate_journal_spec_fragment",
    "validate_journal_spec_suspend",
    "validate_list_request",
    "validate_list_response",
    "validate_list_response_journal",
    "validate_media_type",
    "validate_process_id",
    "validate_process_spec",
    "validate_read_request",
    "validate_read_response",
    "validate_replicate_request",
    "validate_replicate_response",
    "validate_route",
    "validate_spec_labels",
    "validate_status",
    "validate_store_url",
]

MAX_PAGE_LIMIT = 10_000


def _optional_header(msg: Message) -> None:
    if msg.HasField("header"):
        with within("header"):
            validate_header(msg.header)  # type: ignore[attr-defined]


def _reject_set(msg: Message, fields: tuple[str, ...], context: str) -> None:
    """Raise on the first of `fields` that is set on `msg`."""
    for field in fields:
        value = getattr(msg, field)
        present = msg.HasField(field) if isinstance(value, Message) else bool(value)
        if present:
            raise ValidationError(field, f"unexpected {field} {context}")


def validate_read_request(msg: pb.ReadRequest) -> None:
    """Journal (`;meta` allowed), `offset >= -1`, `end_offset` 0 or >= offset."""
    _optional_header(msg)
    validate_journal_name(msg.journal, "journal", allow_meta=True)
    if msg.offset < -1:
        raise ValidationError("offset", f"expected offset >= -1 (got {msg.offset})")
    if msg.end_offset < 0 or (msg.end_offset != 0 and msg.end_offset < msg.offset):
        raise ValidationError(
            "end_offset",
            f"expected end_offset == 0 or end_offset >= offset {msg.offset} (got {msg.end_offset})",
        )


def _validate_read_metadata(msg: pb.ReadResponse) -> None:
    if msg.write_head < 0:
        raise ValidationError("write_head", f"expected write_head >= 0 (got {msg.write_head})")
    if not msg.HasField("fragment"):
        if msg.status == pb.OK and msg.offset != 0:
            raise ValidationError(
                "offset", f"expected offset 0 without a fragment (got {msg.offset})"
            )
        if msg.fragment_url:
            raise ValidationError("fragment_url", "unexpected fragment_url without a fragment")
        return
    fragment = msg.fragment
    validate_fragment(fragment, "fragment")
    if not fragment.begin <= msg.offset < fragment.end:
        raise ValidationError(
            "offset",
            f"expected {fragment.begin} <= offset < {fragment.end} (got {msg.offset})",
        )
    if msg.write_head < fragment.end:
        raise ValidationError(
            "write_head", f"expected write_head >= {fragment.end} (got {msg.write_head})"
        )
    if msg.fragment_url:
        parse_url(msg.fragment_url, "fragment_url")


def validate_read_response(msg: pb.ReadResponse) -> None:
    """A content chunk (OK, only offset+content) or a metadata response."""
    validate_status(msg.status)
    if msg.content:
        if msg.status != pb.OK:
            raise ValidationError(
                "status", f"expected OK with content (got {pb.Status.Name(msg.status)})"
            )
        _reject_set(msg, ("header", "write_head", "fragment", "fragment_url"), "with content")
        return
    _optional_header(msg)
    _validate_read_metadata(msg)


_FOLLOW_UP_UNSET = (
    "header",
    "do_not_proxy",
    "offset",
    "check_registers",
    "union_registers",
    "subtract_registers",
    "suspend",
)


def validate_append_request(msg: pb.AppendRequest) -> None:
    """First message (journal + options, no content) or a follow-up (content only)."""
    if not msg.journal:
        fields = msg.ListFields()  # only the set ones: content alone is the common case
        if fields and (len(fields) > 1 or fields[0][0].name != "content"):
            _reject_set(msg, _FOLLOW_UP_UNSET, "in a follow-up (content) message")
        return
    _optional_header(msg)
    validate_journal_name(msg.journal, "journal", allow_meta=True)
    if msg.offset < 0:
        raise ValidationError("offset", f"expected offset >= 0 (got {msg.offset})")
    if msg.content:
        raise ValidationError("content", "unexpected content in the first message")
    if msg.HasField("check_registers"):
        validate_selector(msg.check_registers, "check_registers")
    for field in ("union_registers", "subtract_registers"):
        if msg.HasField(field):
            validate_label_set(getattr(msg, field), False, field)
    if msg.suspend not in pb.AppendRequest.Suspend.values():
        raise ValidationError("suspend", f"expected 0 <= suspend <= 4 (got {msg.suspend})")


def validate_append_response(msg: pb.AppendResponse) -> None:
    """Header always; commit on OK; registers on OK and REGISTER_MISMATCH."""
    validate_status(msg.status)
    with within("header"):
        validate_header(msg.header)
    name = pb.Status.Name(msg.status)
    if msg.status == pb.OK and not msg.HasField("commit"):
        raise ValidationError("commit", f"expected commit with status {name}")
    if msg.HasField("commit"):
        validate_fragment(msg.commit, "commit")
    if msg.status in (pb.OK, pb.REGISTER_MISMATCH) and not msg.HasField("registers"):
        raise ValidationError("registers", f"expected registers with status {name}")
    if msg.HasField("registers"):
        validate_label_set(msg.registers, False, "registers")


def _validate_proposal(msg: pb.ReplicateRequest) -> None:
    if msg.HasField("header"):
        _optional_header(msg)
        if not msg.acknowledge:
            raise ValidationError("acknowledge", "expected acknowledge with a header")
    validate_fragment(msg.proposal, "proposal")
    # Old peers may omit registers; absent is read as empty.
    if msg.HasField("registers"):
        validate_label_set(msg.registers, False, "registers")
    if msg.content:
        raise ValidationError("content", "unexpected content with a proposal")
    if msg.content_delta != 0:
        raise ValidationError(
            "content_delta", f"expected content_delta 0 with a proposal (got {msg.content_delta})"
        )
    if msg.deprecated_journal not in ("", msg.proposal.journal):
        raise ValidationError(
            "deprecated_journal",
            f"expected {quote(msg.proposal.journal)} or empty "
            f"(got {quote(msg.deprecated_journal)})",
        )


def validate_replicate_request(msg: pb.ReplicateRequest) -> None:
    """A proposal message or a content message (never both)."""
    if msg.HasField("proposal"):
        _validate_proposal(msg)
        return
    if not msg.content:
        raise ValidationError("content", "expected content or a proposal")
    if msg.content_delta < 0:
        raise ValidationError(
            "content_delta", f"expected content_delta >= 0 (got {msg.content_delta})"
        )
    _reject_set(msg, ("header", "registers", "acknowledge", "deprecated_journal"), "with content")


def validate_replicate_response(msg: pb.ReplicateResponse) -> None:
    """WRONG_ROUTE carries a header; PROPOSAL_MISMATCH a fragment and registers."""
    validate_status(msg.status)
    _optional_header(msg)
    name = pb.Status.Name(msg.status)
    if msg.status == pb.WRONG_ROUTE and not msg.HasField("header"):
        raise ValidationError("header", f"expected header with status {name}")
    if msg.status == pb.PROPOSAL_MISMATCH:
        for field in ("fragment", "registers"):
            if not msg.HasField(field):
                raise ValidationError(field, f"expected {field} with status {name}")
    if msg.HasField("fragment"):
        validate_fragment(msg.fragment, "fragment")
    if msg.HasField("registers"):
        validate_label_set(msg.registers, False, "registers")


def validate_list_request(msg: pb.ListRequest) -> None:
    """A valid selector whose `prefix` meta-label values end in `/`."""
    validate_selector(msg.selector, "selector")
    for side in ("include", "exclude"):
        for index, label in enumerate(getattr(msg.selector, side).labels):
            if label.name == META_PREFIX and not label.value.endswith("/"):
                raise ValidationError(
                    f"selector.{side}.labels[{index}].value",
                    f'prefix value {quote(label.value)} must end in "/"',
                )
    if msg.HasField("watch_resume"):
        with within("watch_resume"):
            validate_header(msg.watch_resume)


def validate_list_response_journal(msg: pb.ListResponse.Journal) -> None:
    """A valid spec, `mod_revision > 0` and a valid route."""
    with within("spec"):
        validate_journal_spec(msg.spec)
    if msg.mod_revision <= 0:
        raise ValidationError("mod_revision", f"expected mod_revision > 0 (got {msg.mod_revision})")
    with within("route"):
        validate_route(msg.route)


def validate_list_response(msg: pb.ListResponse) -> None:
    """Status, header (unless zero: continuation and end-of-snapshot messages), journals."""
    validate_status(msg.status)
    if msg.HasField("header") and msg.header.ByteSize():
        with within("header"):
            validate_header(msg.header)
    for index, journal in enumerate(msg.journals):
        with within(f"journals[{index}]"):
            validate_list_response_journal(journal)


def validate_apply_request_change(msg: pb.ApplyRequest.Change) -> None:
    """Exactly one of upsert/delete, with a fitting `expect_mod_revision`."""
    if msg.HasField("upsert") == bool(msg.delete):
        raise ValidationError("", "expected exactly one of upsert or delete")
    expect = msg.expect_mod_revision
    if msg.HasField("upsert"):
        with within("upsert"):
            validate_journal_spec(msg.upsert)
        if expect < -1:
            raise ValidationError(
                "expect_mod_revision",
                f"expected expect_mod_revision >= 0 or -1 with an upsert (got {expect})",
            )
        return
    validate_journal_name(msg.delete, "delete")
    if expect <= 0 and expect != -1:
        raise ValidationError(
            "expect_mod_revision",
            f"expected expect_mod_revision > 0 or -1 with a delete (got {expect})",
        )


def validate_apply_request(msg: pb.ApplyRequest) -> None:
    """Every change valid."""
    for index, change in enumerate(msg.changes):
        with within(f"changes[{index}]"):
            validate_apply_request_change(change)


def validate_apply_response(msg: pb.ApplyResponse) -> None:
    """A known status and a valid header."""
    validate_status(msg.status)
    with within("header"):
        validate_header(msg.header)


def validate_fragments_request(msg: pb.FragmentsRequest) -> None:
    """Journal, mod-time bounds, page token and limit, positive signatureTTL."""
    _optional_header(msg)
    validate_journal_name(msg.journal, "journal", allow_meta=True)
    if msg.end_mod_time != 0 and msg.end_mod_time < msg.begin_mod_time:
        raise ValidationError(
            "end_mod_time",
            f"expected end_mod_time == 0 or end_mod_time >= begin_mod_time "
            f"{msg.begin_mod_time} (got {msg.end_mod_time})",
        )
    if msg.next_page_token < 0:
        raise ValidationError(
            "next_page_token", f"expected next_page_token >= 0 (got {msg.next_page_token})"
        )
    expect_range(msg.page_limit, 0, MAX_PAGE_LIMIT, "page_limit")
    if msg.HasField("signatureTTL"):
        validate_duration(msg.signatureTTL, "signatureTTL")
    if msg.HasField("signatureTTL") and to_nanos(msg.signatureTTL) <= 0:
        raise ValidationError(
            "signatureTTL",
            f"expected signatureTTL > 0s (got {format_duration(msg.signatureTTL)})",
        )


def validate_fragments_response(msg: pb.FragmentsResponse) -> None:
    """Status, header, each listed fragment and its signed URL."""
    validate_status(msg.status)
    with within("header"):
        validate_header(msg.header)
    for index, item in enumerate(msg.fragments):
        validate_fragment(item.spec, f"fragments[{index}].spec")
        if item.signed_url:
            parse_url(item.signed_url, f"fragments[{index}].signed_url")
    if msg.next_page_token < 0:
        raise ValidationError(
            "next_page_token", f"expected next_page_token >= 0 (got {msg.next_page_token})"
        )


def validate_fragment_store_health_request(msg: pb.FragmentStoreHealthRequest) -> None:
    """A valid store URL; `check_delete_prefix` only with `check_delete`, a clean `dir/`."""
    validate_store_url(msg.fragment_store, "fragment_store")
    prefix = msg.check_delete_prefix
    if not prefix:
        return
    path = "check_delete_prefix"
    if not msg.check_delete:
        raise ValidationError(path, "check_delete_prefix requires check_delete")
    if not prefix.endswith("/"):
        raise ValidationError(path, f'{quote(prefix)} must end in "/"')
    if prefix.startswith("../"):
        raise ValidationError(path, f"{quote(prefix)} must not escape the store prefix")
    validate_path_component(prefix[:-1], 1, MAX_JOURNAL_NAME_LEN, path)


def validate_fragment_store_health_response(msg: pb.FragmentStoreHealthResponse) -> None:
    """A known status and a valid header."""
    validate_status(msg.status)
    with within("header"):
        validate_header(msg.header)
