"""Broker value decoding: validated JournalSpecs, BrokerSpecs matching keys, raw assignments."""

from __future__ import annotations

import pytest
from google.protobuf.duration_pb2 import Duration

from gazette_core.allocator.broker_decode import broker_decoder
from gazette_core.broker.protocol import protocol_pb2 as pb

R = "/gazette/cluster"


def journal(name: str) -> pb.JournalSpec:
    return pb.JournalSpec(
        name=name,
        replication=1,
        fragment=pb.JournalSpec.Fragment(
            length=1 << 20,
            compression_codec=pb.NONE,
            refresh_interval=Duration(seconds=60),
        ),
        flags=pb.JournalSpec.O_RDWR,
    )


def broker(zone: str, suffix: str) -> pb.BrokerSpec:
    return pb.BrokerSpec(
        process_spec=pb.ProcessSpec(
            id=pb.ProcessSpec.ID(zone=zone, suffix=suffix), endpoint="http://127.0.0.1:8080"
        ),
        journal_limit=10,
    )


def test_decodes_each_kind() -> None:
    decode = broker_decoder(R)
    spec = journal("a/journal")
    assert decode(f"{R}/items/a/journal", spec.SerializeToString()) == spec
    member = broker("zone", "broker-1")
    assert decode(f"{R}/members/zone#broker-1", member.SerializeToString()) == member
    route = pb.Route(members=[member.process_spec.id], primary=0)
    assert decode(f"{R}/assign/a/journal#zone#broker-1#0", b"") == b""
    raw = route.SerializeToString()
    assert decode(f"{R}/assign/a/journal#zone#broker-1#0", raw) == raw


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (
            f"{R}/items/a/other",
            journal("a/journal").SerializeToString(),
            f"item '{R}/items/a/other': JournalSpec name 'a/journal' doesn't match its key",
        ),
        (
            f"{R}/items/a/journal",
            b"\xff\xff",
            f"item '{R}/items/a/journal': invalid JournalSpec: Error parsing message "
            "with type 'protocol.JournalSpec': Wire format was corrupt",
        ),
        (
            f"{R}/members/zone#broker-2",
            broker("zone", "broker-1").SerializeToString(),
            f"member '{R}/members/zone#broker-2': BrokerSpec id ('zone', 'broker-1') "
            "doesn't match its key",
        ),
        (
            f"{R}/assign/a/journal#zone#0",
            b"",
            f"assignment key '{R}/assign/a/journal#zone#0' is not <item>#<zone>#<suffix>#<slot>",
        ),
        (f"{R}/other", b"", f"unexpected key '{R}/other' under '{R}'"),
    ],
)
def test_rejects_bad_values(key: str, value: bytes, message: str) -> None:
    with pytest.raises(ValueError) as err:
        broker_decoder(R)(key, value)
    assert str(err.value) == message


def test_rejects_invalid_journal_spec() -> None:
    from gazette_core.broker.protocol.validate_ext import validate_journal_spec

    spec = journal("a/journal")
    spec.replication = 0
    with pytest.raises(ValueError) as direct:
        validate_journal_spec(spec)
    with pytest.raises(ValueError) as err:
        broker_decoder(R)(f"{R}/items/a/journal", spec.SerializeToString())
    assert str(err.value) == f"item '{R}/items/a/journal': {direct.value}"
