"""Validation of broker RPC request and response messages."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from google.protobuf.duration_pb2 import Duration

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.labels_ext import label_set, parse_selector
from gazette_core.broker.protocol.validate_ext import (
    strip_meta,
    validate_append_request,
    validate_append_response,
    validate_apply_request,
    validate_apply_response,
    validate_fragment_store_health_request,
    validate_fragment_store_health_response,
    validate_fragments_request,
    validate_fragments_response,
    validate_list_request,
    validate_list_response,
    validate_read_request,
    validate_read_response,
    validate_replicate_request,
    validate_replicate_response,
)
from gazette_core.errors import ValidationError

A = pb.ProcessSpec.ID(zone="east", suffix="broker-a")
ETCD = pb.Header.Etcd(cluster_id=1, member_id=2, revision=3, raft_term=4)
HEADER = pb.Header(process_id=A, route=pb.Route(members=[A], primary=0), etcd=ETCD)
BAD_HEADER = pb.Header(route=pb.Route(primary=-1), etcd=pb.Header.Etcd(member_id=2))
FRAGMENT = pb.Fragment(journal="a/journal", begin=100, end=200, compression_codec=pb.NONE)
SPEC = pb.JournalSpec(
    name="a/journal",
    replication=1,
    fragment=pb.JournalSpec.Fragment(
        length=1024, compression_codec=pb.NONE, refresh_interval=Duration(seconds=60)
    ),
)


def check(validate: Callable[[Any], None], msg: Any, message: str | None) -> None:
    """Validate `msg`: it passes when `message` is None, else fails with exactly it."""
    if message is None:
        validate(msg)
        return
    with pytest.raises(ValidationError) as info:
        validate(msg)
    assert str(info.value) == message


def test_strip_meta() -> None:
    assert strip_meta("a/journal;reader") == "a/journal"


@pytest.mark.parametrize(
    ("msg", "message"),
    [
        (pb.ReadRequest(journal="a/journal", offset=-1, block=True), None),
        (pb.ReadRequest(journal="a/journal;meta", offset=5, end_offset=5), None),
        (pb.ReadRequest(header=HEADER, journal="a/journal"), None),
        (
            pb.ReadRequest(header=BAD_HEADER, journal="a/journal"),
            "header.etcd.cluster_id: expected cluster_id != 0 (got 0)",
        ),
        (
            pb.ReadRequest(journal="a//journal"),
            'journal: "a//journal" must be a clean path (no "//", no "." or ".." segments, '
            'no trailing "/")',
        ),
        (pb.ReadRequest(journal="a/journal", offset=-2), "offset: expected offset >= -1 (got -2)"),
        (
            pb.ReadRequest(journal="a/journal", offset=10, end_offset=5),
            "end_offset: expected end_offset == 0 or end_offset >= offset 10 (got 5)",
        ),
        (
            pb.ReadRequest(journal="a/journal", offset=-1, end_offset=-1),
            "end_offset: expected end_offset == 0 or end_offset >= offset -1 (got -1)",
        ),
    ],
)
def test_read_request(msg: pb.ReadRequest, message: str | None) -> None:
    check(validate_read_request, msg, message)


@pytest.mark.parametrize(
    ("msg", "message"),
    [
        (pb.ReadResponse(offset=150, content=b"data"), None),
        (
            pb.ReadResponse(
                header=HEADER,
                offset=150,
                write_head=200,
                fragment=FRAGMENT,
                fragment_url="https://store/x?sig=1",
            ),
            None,
        ),
        (pb.ReadResponse(status=pb.OFFSET_NOT_YET_AVAILABLE, offset=200, write_head=200), None),
        (pb.ReadResponse(status=pb.JOURNAL_NOT_FOUND, header=HEADER), None),
        (pb.ReadResponse(status=99), "status: invalid status 99"),  # type: ignore[arg-type]
        (
            pb.ReadResponse(status=pb.NOT_ALLOWED, content=b"x"),
            "status: expected OK with content (got NOT_ALLOWED)",
        ),
        (
            pb.ReadResponse(header=HEADER, content=b"x"),
            "header: unexpected header with content",
        ),
        (
            pb.ReadResponse(write_head=5, content=b"x"),
            "write_head: unexpected write_head with content",
        ),
        (
            pb.ReadResponse(fragment=FRAGMENT, content=b"x"),
            "fragment: unexpected fragment with content",
        ),
        (
            pb.ReadResponse(fragment_url="http://x/", content=b"x"),
            "fragment_url: unexpected fragment_url with content",
        ),
        (pb.ReadResponse(write_head=-1), "write_head: expected write_head >= 0 (got -1)"),
        (
            pb.ReadResponse(offset=200, write_head=200, fragment=FRAGMENT),
            "offset: expected 100 <= offset < 200 (got 200)",
        ),
        (
            pb.ReadResponse(offset=150, write_head=199, fragment=FRAGMENT),
            "write_head: expected write_head >= 200 (got 199)",
        ),
        (
            pb.ReadResponse(
                offset=150, write_head=200, fragment=pb.Fragment(journal="a/journal", end=200)
            ),
            "fragment.compression_codec: invalid compression codec 0",
        ),
        (
            pb.ReadResponse(
                offset=150, write_head=200, fragment=FRAGMENT, fragment_url="http://h:x/"
            ),
            'fragment_url: "http://h:x/" is not a valid URL (Port could not be cast to integer '
            "value as 'x')",
        ),
        (
            pb.ReadResponse(offset=5, write_head=200),
            "offset: expected offset 0 without a fragment (got 5)",
        ),
        (
            pb.ReadResponse(write_head=200, fragment_url="http://x/"),
            "fragment_url: unexpected fragment_url without a fragment",
        ),
    ],
)
def test_read_response(msg: pb.ReadResponse, message: str | None) -> None:
    check(validate_read_response, msg, message)


FOLLOW_UP = "in a follow-up (content) message"


@pytest.mark.parametrize(
    ("msg", "message"),
    [
        (pb.AppendRequest(journal="a/journal"), None),
        (
            pb.AppendRequest(
                header=HEADER,
                journal="a/journal;meta",
                do_not_proxy=True,
                offset=1024,
                check_registers=parse_selector("owner=me"),
                union_registers=label_set(("owner", "me")),
                subtract_registers=label_set(("owner", "you")),
                suspend=pb.AppendRequest.SUSPEND_KEEP,
            ),
            None,
        ),
        (pb.AppendRequest(content=b"chunk"), None),
        (pb.AppendRequest(), None),
        (pb.AppendRequest(journal="a/journal", offset=-1), "offset: expected offset >= 0 (got -1)"),
        (
            pb.AppendRequest(journal="a/journal", content=b"x"),
            "content: unexpected content in the first message",
        ),
        (
            pb.AppendRequest(
                journal="a/journal",
                check_registers=pb.LabelSelector(include=label_set(("bb", "1"), ("aa", "1"))),
            ),
            None,  # label_set sorts, so this one is valid.
        ),
        (
            pb.AppendRequest(
                journal="a/journal",
                check_registers=pb.LabelSelector(
                    include=pb.LabelSet(labels=[pb.Label(name="x", value="1")])
                ),
            ),
            'check_registers.include.labels[0].name: invalid length of "x": expected 2 <= '
            "length <= 64 bytes (got 1)",
        ),
        (
            pb.AppendRequest(
                journal="a/journal",
                union_registers=pb.LabelSet(labels=[pb.Label(name="aa", value="1", prefix=True)]),
            ),
            'union_registers.labels[0].prefix: prefix match of label "aa" is only allowed in a '
            "selector",
        ),
        (
            pb.AppendRequest(
                journal="a/journal",
                subtract_registers=pb.LabelSet(
                    labels=[pb.Label(name="bb", value="1"), pb.Label(name="aa", value="1")]
                ),
            ),
            "subtract_registers.labels[1]: labels must be unique and sorted by (name, value): "
            '"bb=1" is not before "aa=1"',
        ),
        (
            pb.AppendRequest(journal="a/journal", suspend=5),  # type: ignore[arg-type]
            "suspend: expected 0 <= suspend <= 4 (got 5)",
        ),
        (pb.AppendRequest(header=HEADER, content=b"x"), f"header: unexpected header {FOLLOW_UP}"),
        (
            pb.AppendRequest(do_not_proxy=True),
            f"do_not_proxy: unexpected do_not_proxy {FOLLOW_UP}",
        ),
        (pb.AppendRequest(offset=5, content=b"x"), f"offset: unexpected offset {FOLLOW_UP}"),
        (
            pb.AppendRequest(check_registers=pb.LabelSelector()),
            f"check_registers: unexpected check_registers {FOLLOW_UP}",
        ),
        (
            pb.AppendRequest(union_registers=pb.LabelSet()),
            f"union_registers: unexpected union_registers {FOLLOW_UP}",
        ),
        (
            pb.AppendRequest(subtract_registers=pb.LabelSet()),
            f"subtract_registers: unexpected subtract_registers {FOLLOW_UP}",
        ),
        (
            pb.AppendRequest(suspend=pb.AppendRequest.SUSPEND_NOW),
            f"suspend: unexpected suspend {FOLLOW_UP}",
        ),
    ],
)
def test_append_request(msg: pb.AppendRequest, message: str | None) -> None:
    check(validate_append_request, msg, message)


@pytest.mark.parametrize(
    ("msg", "message"),
    [
        (pb.AppendResponse(header=HEADER, commit=FRAGMENT, registers=pb.LabelSet()), None),
        (
            pb.AppendResponse(status=pb.REGISTER_MISMATCH, header=HEADER, registers=pb.LabelSet()),
            None,
        ),
        (pb.AppendResponse(status=pb.WRONG_APPEND_OFFSET, header=HEADER), None),
        (
            pb.AppendResponse(status=pb.JOURNAL_NOT_FOUND),
            "header.route.primary: expected -1 <= primary < 0 (got 0)",
        ),
        (
            pb.AppendResponse(header=HEADER, registers=pb.LabelSet()),
            "commit: expected commit with status OK",
        ),
        (
            pb.AppendResponse(header=HEADER, commit=FRAGMENT),
            "registers: expected registers with status OK",
        ),
        (
            pb.AppendResponse(status=pb.REGISTER_MISMATCH, header=HEADER),
            "registers: expected registers with status REGISTER_MISMATCH",
        ),
        (
            pb.AppendResponse(
                header=HEADER, commit=pb.Fragment(journal="a/journal", begin=5, end=4)
            ),
            "commit.begin: expected 0 <= begin <= end (got begin 5, end 4)",
        ),
    ],
)
def test_append_response(msg: pb.AppendResponse, message: str | None) -> None:
    check(validate_append_response, msg, message)


REGS = label_set(("owner", "me"))


@pytest.mark.parametrize(
    ("msg", "message"),
    [
        (
            pb.ReplicateRequest(
                header=HEADER,
                deprecated_journal="a/journal",
                proposal=FRAGMENT,
                acknowledge=True,
                registers=REGS,
            ),
            None,
        ),
        (pb.ReplicateRequest(proposal=FRAGMENT), None),  # Un-acked roll; nil registers.
        (pb.ReplicateRequest(content=b"x", content_delta=10), None),
        (
            pb.ReplicateRequest(header=HEADER, proposal=FRAGMENT, registers=REGS),
            "acknowledge: expected acknowledge with a header",
        ),
        (
            pb.ReplicateRequest(header=BAD_HEADER, proposal=FRAGMENT, acknowledge=True),
            "header.etcd.cluster_id: expected cluster_id != 0 (got 0)",
        ),
        (
            pb.ReplicateRequest(proposal=pb.Fragment(journal="a/journal", end=1)),
            "proposal.compression_codec: invalid compression codec 0",
        ),
        (
            pb.ReplicateRequest(proposal=FRAGMENT, content=b"x"),
            "content: unexpected content with a proposal",
        ),
        (
            pb.ReplicateRequest(proposal=FRAGMENT, content_delta=3),
            "content_delta: expected content_delta 0 with a proposal (got 3)",
        ),
        (
            pb.ReplicateRequest(proposal=FRAGMENT, deprecated_journal="other/journal"),
            'deprecated_journal: expected "a/journal" or empty (got "other/journal")',
        ),
        (pb.ReplicateRequest(), "content: expected content or a proposal"),
        (
            pb.ReplicateRequest(content=b"x", content_delta=-1),
            "content_delta: expected content_delta >= 0 (got -1)",
        ),
        (
            pb.ReplicateRequest(content=b"x", header=HEADER),
            "header: unexpected header with content",
        ),
        (
            pb.ReplicateRequest(content=b"x", registers=REGS),
            "registers: unexpected registers with content",
        ),
        (
            pb.ReplicateRequest(content=b"x", acknowledge=True),
            "acknowledge: unexpected acknowledge with content",
        ),
        (
            pb.ReplicateRequest(content=b"x", deprecated_journal="a/journal"),
            "deprecated_journal: unexpected deprecated_journal with content",
        ),
    ],
)
def test_replicate_request(msg: pb.ReplicateRequest, message: str | None) -> None:
    check(validate_replicate_request, msg, message)


@pytest.mark.parametrize(
    ("msg", "message"),
    [
        (pb.ReplicateResponse(header=HEADER), None),
        (pb.ReplicateResponse(), None),
        (pb.ReplicateResponse(status=pb.WRONG_ROUTE, header=HEADER), None),
        (
            pb.ReplicateResponse(status=pb.PROPOSAL_MISMATCH, fragment=FRAGMENT, registers=REGS),
            None,
        ),
        (
            pb.ReplicateResponse(status=pb.WRONG_ROUTE),
            "header: expected header with status WRONG_ROUTE",
        ),
        (
            pb.ReplicateResponse(status=pb.PROPOSAL_MISMATCH, registers=REGS),
            "fragment: expected fragment with status PROPOSAL_MISMATCH",
        ),
        (
            pb.ReplicateResponse(status=pb.PROPOSAL_MISMATCH, fragment=FRAGMENT),
            "registers: expected registers with status PROPOSAL_MISMATCH",
        ),
        (pb.ReplicateResponse(status=42), "status: invalid status 42"),  # type: ignore[arg-type]
    ],
)
def test_replicate_response(msg: pb.ReplicateResponse, message: str | None) -> None:
    check(validate_replicate_response, msg, message)


@pytest.mark.parametrize(
    ("msg", "message"),
    [
        (pb.ListRequest(), None),
        (pb.ListRequest(selector=parse_selector("prefix=a/, prefix!=a/b/"), watch=True), None),
        (pb.ListRequest(selector=parse_selector("name:prefix=a/b")), None),
        (
            pb.ListRequest(selector=parse_selector("app=web, prefix=a/b")),
            'selector.include.labels[1].value: prefix value "a/b" must end in "/"',
        ),
        (
            pb.ListRequest(selector=parse_selector("prefix notin (a/, b)")),
            'selector.exclude.labels[1].value: prefix value "b" must end in "/"',
        ),
        (
            pb.ListRequest(selector=pb.LabelSelector(include=label_set(("bb", ""), ("bb", "1")))),
            'selector.include.labels[1]: label "bb" has both empty and non-empty values',
        ),
        (pb.ListRequest(watch=True, watch_resume=HEADER), None),
        (
            pb.ListRequest(watch=True, watch_resume=BAD_HEADER),
            "watch_resume.etcd.cluster_id: expected cluster_id != 0 (got 0)",
        ),
    ],
)
def test_list_request(msg: pb.ListRequest, message: str | None) -> None:
    check(validate_list_request, msg, message)


def _journal(**fields: Any) -> pb.ListResponse.Journal:
    base: dict[str, Any] = {"spec": SPEC, "mod_revision": 7, "route": pb.Route(primary=-1)}
    return pb.ListResponse.Journal(**{**base, **fields})


@pytest.mark.parametrize(
    ("msg", "message"),
    [
        (pb.ListResponse(header=HEADER, journals=[_journal(), _journal()]), None),
        (pb.ListResponse(journals=[_journal()]), None),  # A continuation message.
        (pb.ListResponse(), None),  # The end-of-snapshot marker.
        (
            pb.ListResponse(header=BAD_HEADER),
            "header.etcd.cluster_id: expected cluster_id != 0 (got 0)",
        ),
        (
            pb.ListResponse(header=HEADER, journals=[_journal(), _journal(mod_revision=0)]),
            "journals[1].mod_revision: expected mod_revision > 0 (got 0)",
        ),
        (
            pb.ListResponse(journals=[_journal(spec=pb.JournalSpec(name="a/journal"))]),
            "journals[0].spec.replication: expected 1 <= replication <= 5 (got 0)",
        ),
        (
            pb.ListResponse(journals=[_journal(route=pb.Route(primary=0))]),
            "journals[0].route.primary: expected -1 <= primary < 0 (got 0)",
        ),
    ],
)
def test_list_response(msg: pb.ListResponse, message: str | None) -> None:
    check(validate_list_response, msg, message)


def _bad_length_spec() -> pb.JournalSpec:
    spec = pb.JournalSpec()
    spec.CopyFrom(SPEC)
    spec.fragment.length = 12
    return spec


@pytest.mark.parametrize(
    ("msg", "message"),
    [
        (
            pb.ApplyRequest(
                changes=[
                    pb.ApplyRequest.Change(upsert=SPEC),
                    pb.ApplyRequest.Change(upsert=SPEC, expect_mod_revision=-1),
                    pb.ApplyRequest.Change(delete="b/journal", expect_mod_revision=9),
                    pb.ApplyRequest.Change(delete="c/journal", expect_mod_revision=-1),
                ]
            ),
            None,
        ),
        (pb.ApplyRequest(), None),
        (
            pb.ApplyRequest(
                changes=[
                    pb.ApplyRequest.Change(upsert=SPEC),
                    pb.ApplyRequest.Change(upsert=SPEC),
                    pb.ApplyRequest.Change(upsert=_bad_length_spec()),
                ]
            ),
            "changes[2].upsert.fragment.length: expected 1024 <= length <= 17179869184 (got 12)",
        ),
        (
            pb.ApplyRequest(changes=[pb.ApplyRequest.Change()]),
            "changes[0]: expected exactly one of upsert or delete",
        ),
        (
            pb.ApplyRequest(changes=[pb.ApplyRequest.Change(upsert=SPEC, delete="a/journal")]),
            "changes[0]: expected exactly one of upsert or delete",
        ),
        (
            pb.ApplyRequest(changes=[pb.ApplyRequest.Change(upsert=SPEC, expect_mod_revision=-2)]),
            "changes[0].expect_mod_revision: expected expect_mod_revision >= 0 or -1 with an "
            "upsert (got -2)",
        ),
        (
            pb.ApplyRequest(changes=[pb.ApplyRequest.Change(delete="a/journal")]),
            "changes[0].expect_mod_revision: expected expect_mod_revision > 0 or -1 with a "
            "delete (got 0)",
        ),
        (
            pb.ApplyRequest(changes=[pb.ApplyRequest.Change(delete="a/j", expect_mod_revision=1)]),
            'changes[0].delete: invalid length of "a/j": expected 4 <= length <= 512 bytes (got 3)',
        ),
    ],
)
def test_apply_request(msg: pb.ApplyRequest, message: str | None) -> None:
    check(validate_apply_request, msg, message)


def test_apply_and_store_health_responses() -> None:
    check(validate_apply_response, pb.ApplyResponse(header=HEADER), None)
    check(
        validate_apply_response,
        pb.ApplyResponse(status=pb.ETCD_TRANSACTION_FAILED),
        "header.route.primary: expected -1 <= primary < 0 (got 0)",
    )
    check(
        validate_fragment_store_health_response,
        pb.FragmentStoreHealthResponse(
            status=pb.FRAGMENT_STORE_UNHEALTHY, header=HEADER, store_health_error="boom"
        ),
        None,
    )
    check(
        validate_fragment_store_health_response,
        pb.FragmentStoreHealthResponse(status=77, header=HEADER),  # type: ignore[arg-type]
        "status: invalid status 77",
    )


@pytest.mark.parametrize(
    ("msg", "message"),
    [
        (pb.FragmentsRequest(journal="a/journal"), None),
        (
            pb.FragmentsRequest(
                header=HEADER,
                journal="a/journal;meta",
                begin_mod_time=10,
                end_mod_time=10,
                next_page_token=4096,
                page_limit=10_000,
                signatureTTL=Duration(seconds=60),
                do_not_proxy=True,
            ),
            None,
        ),
        (
            pb.FragmentsRequest(journal="a/journal", begin_mod_time=10, end_mod_time=9),
            "end_mod_time: expected end_mod_time == 0 or end_mod_time >= begin_mod_time 10 (got 9)",
        ),
        (
            pb.FragmentsRequest(journal="a/journal", next_page_token=-1),
            "next_page_token: expected next_page_token >= 0 (got -1)",
        ),
        (
            pb.FragmentsRequest(journal="a/journal", page_limit=10_001),
            "page_limit: expected 0 <= page_limit <= 10000 (got 10001)",
        ),
        (
            pb.FragmentsRequest(journal="a/journal", page_limit=-1),
            "page_limit: expected 0 <= page_limit <= 10000 (got -1)",
        ),
        (
            pb.FragmentsRequest(journal="a/journal", signatureTTL=Duration()),
            "signatureTTL: expected signatureTTL > 0s (got 0s)",
        ),
        (
            pb.FragmentsRequest(journal="a/journal", header=BAD_HEADER),
            "header.etcd.cluster_id: expected cluster_id != 0 (got 0)",
        ),
    ],
)
def test_fragments_request(msg: pb.FragmentsRequest, message: str | None) -> None:
    check(validate_fragments_request, msg, message)


def test_fragments_response() -> None:
    item = pb.FragmentsResponse._Fragment
    check(
        validate_fragments_response,
        pb.FragmentsResponse(
            header=HEADER,
            fragments=[item(spec=FRAGMENT, signed_url="https://store/x?sig=1")],
            next_page_token=200,
        ),
        None,
    )
    check(
        validate_fragments_response,
        pb.FragmentsResponse(
            header=HEADER, fragments=[item(spec=FRAGMENT), item(spec=pb.Fragment(end=1))]
        ),
        'fragments[1].spec.journal: invalid length of "": expected 4 <= length <= 512 bytes '
        "(got 0)",
    )


STORE = "s3://bucket/prefix/"


@pytest.mark.parametrize(
    ("msg", "message"),
    [
        (pb.FragmentStoreHealthRequest(fragment_store=STORE), None),
        (
            pb.FragmentStoreHealthRequest(
                fragment_store=STORE, check_delete=True, check_delete_prefix="probe/dir/"
            ),
            None,
        ),
        (
            pb.FragmentStoreHealthRequest(fragment_store="s3://bucket"),
            'fragment_store: path of store URL "s3://bucket" must end in "/"',
        ),
        (
            pb.FragmentStoreHealthRequest(fragment_store=STORE, check_delete_prefix="probe/"),
            "check_delete_prefix: check_delete_prefix requires check_delete",
        ),
        (
            pb.FragmentStoreHealthRequest(
                fragment_store=STORE, check_delete=True, check_delete_prefix="probe"
            ),
            'check_delete_prefix: "probe" must end in "/"',
        ),
        (
            pb.FragmentStoreHealthRequest(
                fragment_store=STORE, check_delete=True, check_delete_prefix="../up/"
            ),
            'check_delete_prefix: "../up/" must not escape the store prefix',
        ),
        (
            pb.FragmentStoreHealthRequest(
                fragment_store=STORE, check_delete=True, check_delete_prefix="a/../b/"
            ),
            'check_delete_prefix: "a/../b" must be a clean path (no "//", no "." or ".." '
            'segments, no trailing "/")',
        ),
        (
            pb.FragmentStoreHealthRequest(
                fragment_store=STORE, check_delete=True, check_delete_prefix="/"
            ),
            'check_delete_prefix: invalid length of "": expected 1 <= length <= 512 bytes (got 0)',
        ),
    ],
)
def test_fragment_store_health_request(
    msg: pb.FragmentStoreHealthRequest, message: str | None
) -> None:
    check(validate_fragment_store_health_request, msg, message)
