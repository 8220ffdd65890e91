"""StructMessage: typed structs decoded in C, with JSONMessage's rules and errors, read a chunk
at a time by read_uncommitted_batches."""

from __future__ import annotations

import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.message.framing import JSONFraming
from gazette_core.message.json_fields import FieldTypeError
from gazette_core.message.reader import (
    MessageDecodeError,
    read_uncommitted,
    read_uncommitted_batches,
)
from gazette_core.message.structs import StructMessage
from gazette_core.message.uuid import Flags, build_uuid, get_parts
from gazette_core.testing.broker import journal_spec
from tests.broker.support import append, create
from tests.message.support import A

JOURNAL = "ticks/one"


class Tick(StructMessage):
    key: str = ""
    n: int = 0
    price: float = 0.0
    tags: list[str] = []
    note: str | None = None


def test_round_trip_uuid_and_acknowledgement() -> None:
    framing = JSONFraming()
    tick = Tick(key="k", n=3, tags=["a"])
    u = build_uuid(A, 1234 << 4, Flags.OUTSIDE_TXN)
    tick.set_uuid(u)
    record = framing.marshal(tick)
    assert record == b'{"uuid":"%s","key":"k","n":3,"price":0.0,"tags":["a"],"note":null}\n' % (
        str(u).encode())
    back = framing.unmarshal(record, Tick())
    assert back == tick and back.get_uuid() == u
    assert back.uuid_parts() == get_parts(u)  # type: ignore[attr-defined]
    assert tick.new_acknowledgement("j") == Tick()
    assert framing.unmarshal(b'{"key":"x","unknown":[1]}\n', Tick()) == Tick(key="x")


@pytest.mark.parametrize(("record", "error"), [
    (b'{"n":"five"}', "field Tick.n: expected int, got string 'five'"),
    (b'{"n":true}', "field Tick.n: expected int, got boolean True"),
    (b'{"price":"1"}', "field Tick.price: expected float, got string '1'"),
    (b'{"tags":["a",2]}', "field Tick.tags[1]: expected str, got number 2"),
    (b'{"note":5}', "field Tick.note: expected str | null, got number 5"),
    (b'{"uuid":7}', "field Tick.uuid: expected str, got number 7"),
])
def test_a_value_of_another_type_fails_naming_the_field(record: bytes, error: str) -> None:
    with pytest.raises(FieldTypeError) as err:
        JSONFraming().unmarshal(record, Tick())
    assert str(err.value) == error


def test_records_are_utf8_json_objects_and_nothing_else() -> None:
    framing = JSONFraming()
    with pytest.raises(ValueError, match="not an object"):
        framing.unmarshal(b"[1]\n", Tick())
    for constant in ("NaN", "Infinity", "-Infinity"):
        with pytest.raises(ValueError, match=f"{constant} is not a JSON value"):
            framing.unmarshal(b'{"price":%s}\n' % constant.encode(), Tick())
        with pytest.raises(ValueError, match="JSON"):
            framing.marshal(Tick(price=float(constant)))
    with pytest.raises(UnicodeDecodeError):  # even in a key no field reads
        framing.unmarshal(b'{"other":"\xff"}\n', Tick())
    with pytest.raises(ValueError):
        framing.unmarshal('{"key":"a"}\n'.encode("utf-16-le"), Tick())


@pytest.fixture
async def journal(stub: pb_grpc.JournalStub) -> str:
    await create(stub, journal_spec(JOURNAL, labels=(("content-type", "application/x-ndjson"),)))
    return JOURNAL


async def test_batches_are_the_records_of_each_chunk_with_exact_offsets(
        stub: pb_grpc.JournalStub, journal: str) -> None:
    framing = JSONFraming()
    records = [framing.marshal(Tick(key=f"k{i}", n=i)) for i in range(300)]
    await append(stub, journal, b"".join(records[:100]), b"".join(records[100:]))
    calls: list[str] = []

    def new_tick(spec: pb.JournalSpec) -> Tick:
        calls.append(spec.name)
        return Tick()

    batches = [b async for b in read_uncommitted_batches(stub, journal, 0, new_tick,
                                                          block=False, keep_records=True)]
    assert calls == [journal]  # A struct type is learnt once, then decoded in bulk.
    flat = [e for b in batches for e in b]
    assert [e.record for e in flat] == records
    assert [e.message for e in flat] == [Tick(key=f"k{i}", n=i) for i in range(300)]
    assert [e.begin for e in flat] == [sum(map(len, records[:i])) for i in range(300)]
    assert all(e.end - e.begin == len(r) for e, r in zip(flat, records, strict=True))
    one_by_one = [e async for e in read_uncommitted(stub, journal, 0, lambda _: Tick(),
                                                    block=False, keep_records=True)]
    assert one_by_one == flat


@pytest.mark.parametrize("bad", [b'{"n":"x"}\n', b"\n", b'{"key":"\xff"}\n', b"[]\n"])
async def test_a_bad_record_ends_the_read_after_the_ones_before_it(
        stub: pb_grpc.JournalStub, journal: str, bad: bytes) -> None:
    good = JSONFraming().marshal(Tick(key="ok"))
    await append(stub, journal, good * 3 + bad + good)
    got = []
    with pytest.raises(MessageDecodeError, match=f"{journal} offset {3 * len(good)}: cannot"):
        async for batch in read_uncommitted_batches(stub, journal, 0, lambda _: Tick(),
                                                    block=False):
            got.extend(batch)
    assert [e.end for e in got] == [len(good), 2 * len(good), 3 * len(good)]
