"""Bad input a real broker refuses with a short, clear message.

Long inputs are echoed cut short (a whole 10 KB name would push the status
past gRPC's metadata limit); Append follow-ups may carry only content; and
durations must be well-formed protobuf Durations that fit Go's int64
nanoseconds.
"""

from __future__ import annotations

import grpc
import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.service import Broker
from gazette_core.testing.broker import journal_spec
from tests.broker.statuses_support import assert_clean, rpc_error, tracebacks
from tests.broker.support import append, create, read_all

LONG = "x" * 10_000
UNKNOWN = grpc.StatusCode.UNKNOWN


def upsert(spec: pb.JournalSpec) -> pb.ApplyRequest:
    return pb.ApplyRequest(changes=[pb.ApplyRequest.Change(upsert=spec)])


async def listed(stub: pb_grpc.JournalStub, req: pb.ListRequest) -> list[pb.ListResponse]:
    return [resp async for resp in stub.List(req)]


def by_name(value: str) -> pb.LabelSelector:
    return pb.LabelSelector(include=pb.LabelSet(labels=[pb.Label(name="name", value=value)]))


async def test_a_10kb_journal_name_is_echoed_cut_short(
        broker: Broker, stub: pb_grpc.JournalStub) -> None:
    name = f"a/{LONG}"
    echoed = f'"a/{"x" * 98}"... (10002 bytes)'
    length = f"invalid length of {echoed}: expected 4 <= length <= 512 bytes (got 10002)"
    err = await rpc_error(stub.Apply(upsert(journal_spec(name))))
    assert_clean(err, UNKNOWN, f"changes[0].upsert.name: {length}")
    err = await rpc_error(read_all(stub, pb.ReadRequest(journal=name)))
    assert_clean(err, UNKNOWN, f"journal: {length}")
    err = await rpc_error(append(stub, name, b"x"))
    assert_clean(err, UNKNOWN, f"journal: {length}")
    err = await rpc_error(stub.ListFragments(pb.FragmentsRequest(journal=name)))
    assert_clean(err, UNKNOWN, f"journal: {length}")


async def test_a_10kb_label_value_or_store_url_is_echoed_cut_short(
        broker: Broker, stub: pb_grpc.JournalStub) -> None:
    spec = journal_spec("a/journal", labels=(("app", LONG),))
    err = await rpc_error(stub.Apply(upsert(spec)))
    assert_clean(err, UNKNOWN, f'changes[0].upsert.labels.labels[0].value: invalid length of '
                               f'"{"x" * 100}"... (10000 bytes): expected 0 <= length <= 1024 '
                               f'bytes (got 10000)')
    err = await rpc_error(listed(stub, pb.ListRequest(selector=by_name(f"a/{LONG}"))))
    details = err.details() or ""
    assert err.code() == UNKNOWN and "... (10002 bytes)" in details, details
    assert len(details) < 400, details
    store = f"s3://bucket/{LONG}"  # not ending in "/"
    err = await rpc_error(stub.FragmentStoreHealth(pb.FragmentStoreHealthRequest(
        fragment_store=store)))
    details = err.details() or ""
    assert err.code() == UNKNOWN and "... (10012 bytes)" in details, details
    assert len(details) < 400, details


async def test_a_10kb_path_postfix_template_is_echoed_cut_short(
        broker: Broker, stub: pb_grpc.JournalStub) -> None:
    spec = journal_spec("a/journal")
    spec.fragment.path_postfix_template = "{{ range . }}" + LONG
    err = await rpc_error(stub.Apply(upsert(spec)))
    details = err.details() or ""
    assert err.code() == UNKNOWN and "... (10013 bytes)" in details, details
    assert details.startswith("changes[0].upsert.fragment.path_postfix_template: "), details
    assert len(details) < 400, details


FOLLOW_UP_FIELDS = [
    ("do_not_proxy", pb.AppendRequest(content=b"x", do_not_proxy=True)),
    ("union_registers", pb.AppendRequest(content=b"x", union_registers=pb.LabelSet(
        labels=[pb.Label(name="reg", value="1")]))),
    ("subtract_registers", pb.AppendRequest(content=b"x", subtract_registers=pb.LabelSet(
        labels=[pb.Label(name="reg", value="1")]))),
    ("check_registers", pb.AppendRequest(content=b"x", check_registers=by_name("a/b"))),
]


@pytest.mark.parametrize(("field", "follow_up"), FOLLOW_UP_FIELDS,
                         ids=[f for f, _ in FOLLOW_UP_FIELDS])
async def test_append_follow_ups_carry_only_content(
        broker: Broker, stub: pb_grpc.JournalStub, caplog: pytest.LogCaptureFixture,
        field: str, follow_up: pb.AppendRequest) -> None:
    await create(stub, journal_spec("f/journal"))
    msgs = [pb.AppendRequest(journal="f/journal"), follow_up, pb.AppendRequest()]
    err = await rpc_error(stub.Append(iter(msgs)))
    assert_clean(err, UNKNOWN,
                 f"append stream: unexpected {field} in a follow-up (content) message")
    after = await append(stub, "f/journal", b"next")
    assert (after.commit.begin, after.registers) == (0, pb.LabelSet())
    assert tracebacks(caplog) == []


def fragment_with(field: str, seconds: int, nanos: int) -> pb.JournalSpec:
    spec = journal_spec("d/journal")
    duration = getattr(spec.fragment, field)
    duration.seconds, duration.nanos = seconds, nanos
    return spec


BAD_DURATIONS = [
    ("refresh_interval", 0, 2_000_000_000,
     "expected -999999999 <= nanos <= 999999999 (got 2000000000)"),
    ("refresh_interval", 5, -5, "seconds 5 and nanos -5 must have the same sign"),
    ("retention", -5, 5, "seconds -5 and nanos 5 must have the same sign"),
    ("flush_interval", 1 << 62, 0,
     "4611686018427387904s exceeds the longest duration, 2562047h47m16.854775807s"),
    ("retention", 1 << 62, 0,
     "4611686018427387904s exceeds the longest duration, 2562047h47m16.854775807s"),
    ("retention", -(1 << 62), 0,
     "-4611686018427387904s exceeds the longest duration, 2562047h47m16.854775807s"),
]


@pytest.mark.parametrize(("field", "seconds", "nanos", "reason"), BAD_DURATIONS)
async def test_malformed_or_overlong_durations_are_refused(
        broker: Broker, stub: pb_grpc.JournalStub,
        field: str, seconds: int, nanos: int, reason: str) -> None:
    err = await rpc_error(stub.Apply(upsert(fragment_with(field, seconds, nanos))))
    assert_clean(err, UNKNOWN, f"changes[0].upsert.fragment.{field}: {reason}")


async def test_the_longest_duration_is_accepted(
        broker: Broker, stub: pb_grpc.JournalStub) -> None:
    spec = fragment_with("retention", 9_223_372_036, 854_775_807)
    assert (await stub.Apply(upsert(spec))).status == pb.OK
