"""AppendService against a real broker: per-record spans and shared batch commits."""

from __future__ import annotations

import pytest

from gazette_core.broker.client.append_service import AppendService
from gazette_core.broker.client.appender import append
from gazette_core.broker.client.retry_reader import read_all
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.service import Broker
from gazette_core.errors import AppendError
from gazette_core.testing.broker import journal_spec
from tests.broker.support import create


async def test_records_keep_order_and_spans_across_batches(broker: Broker,
                                                           stub: pb_grpc.JournalStub) -> None:
    await create(stub, journal_spec("s/one"), journal_spec("s/two"))
    records = [f"record {i:05d}\n".encode() for i in range(3000)]
    async with AppendService(stub, max_batch_bytes=4096) as service:
        spans = [service.write("s/one", r) for r in records]
        handles = [service.enqueue("s/two", r) for r in records]
        last = await handles[-1]
    one = await read_all(stub, "s/one")
    two = await read_all(stub, "s/two")
    assert one == two == b"".join(records)
    offset = 0
    for record, span in zip(records, spans, strict=True):
        assert span.result() == pb.Fragment(journal="s/one", begin=offset,
                                            end=offset + len(record))
        offset += len(record)
    assert len({id(h) for h in handles}) > 1  # several batches were used
    assert (last.journal, last.end) == ("s/two", len(two))


async def test_check_registers_guard_every_batch(broker: Broker,
                                                 stub: pb_grpc.JournalStub) -> None:
    await create(stub, journal_spec("s/fenced"))
    mine = pb.LabelSet(labels=[pb.Label(name="author", value="a")])
    await append(stub, "s/fenced", b"claim\n", union_registers=mine)
    guard = pb.LabelSelector(include=mine)
    async with AppendService(stub, check_registers=guard) as service:
        await service.enqueue("s/fenced", b"kept\n")
    other = pb.LabelSet(labels=[pb.Label(name="author", value="b")])
    await append(stub, "s/fenced", b"takeover\n", union_registers=other)
    async with AppendService(stub, check_registers=guard) as service:
        lost = service.enqueue("s/fenced", b"lost\n")
        with pytest.raises(AppendError) as failure:
            await lost
    assert failure.value.status == pb.REGISTER_MISMATCH
    assert await read_all(stub, "s/fenced") == b"claim\nkept\ntakeover\n"
