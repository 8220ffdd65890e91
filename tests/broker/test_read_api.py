"""Read RPC: stream shape, offsets, blocking, end_offset and statuses on a real broker."""

from __future__ import annotations

import asyncio

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.protocol.validate_ext import validate_read_response
from gazette_core.broker.read_api import CHUNK_SIZE
from gazette_core.broker.service import Broker
from gazette_core.testing.broker import journal_spec
from tests.broker.support import append, create, read_all


def local_header(broker: Broker, etcd: pb.Header.Etcd) -> pb.Header:
    return pb.Header(process_id=broker.process_id,
                     route=pb.Route(members=[broker.process_id], primary=0,
                                    endpoints=[broker.endpoint]), etcd=etcd)


async def test_read_streams_metadata_then_content(broker: Broker,
                                                  stub: pb_grpc.JournalStub) -> None:
    await create(stub, journal_spec("a/journal"))
    commit = (await append(stub, "a/journal", b"hello\n")).commit
    out = await read_all(stub, pb.ReadRequest(journal="a/journal", offset=0))
    fragment = pb.Fragment(journal="a/journal", begin=0, end=6, sum=out[0].fragment.sum,
                           compression_codec=pb.NONE)
    assert out == [
        pb.ReadResponse(status=pb.OK, header=local_header(broker, out[0].header.etcd),
                        offset=0, write_head=6, fragment=fragment),
        pb.ReadResponse(offset=0, content=b"hello\n"),
        pb.ReadResponse(status=pb.OFFSET_NOT_YET_AVAILABLE, offset=6, write_head=6),
    ]
    assert commit.end == 6
    for resp in out:
        validate_read_response(resp)


async def test_content_is_chunked_below_32kib(broker: Broker, stub: pb_grpc.JournalStub) -> None:
    await create(stub, journal_spec("a/journal"))
    data = bytes(range(256)) * 1000  # 256000 bytes
    await append(stub, "a/journal", data)
    out = await read_all(stub, pb.ReadRequest(journal="a/journal"))
    chunks = [r for r in out if r.content]
    assert all(len(r.content) <= CHUNK_SIZE for r in chunks)
    assert [r.offset for r in chunks] == list(range(0, len(data), CHUNK_SIZE))
    assert b"".join(r.content for r in chunks) == data


async def test_offset_minus_one_is_the_write_head(broker: Broker,
                                                  stub: pb_grpc.JournalStub) -> None:
    await create(stub, journal_spec("a/journal"))
    await append(stub, "a/journal", b"0123456789")
    out = await read_all(stub, pb.ReadRequest(journal="a/journal", offset=-1))
    assert [(r.status, r.offset, r.write_head) for r in out] == [
        (pb.OFFSET_NOT_YET_AVAILABLE, 10, 10)]


async def test_blocking_read_receives_later_appends(broker: Broker,
                                                    stub: pb_grpc.JournalStub) -> None:
    await create(stub, journal_spec("a/journal"))
    call = stub.Read(pb.ReadRequest(journal="a/journal", offset=0, block=True))
    received = bytearray()

    async def consume() -> None:
        async for resp in call:
            received.extend(resp.content)
            if len(received) >= 6:
                return

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.1)
    await append(stub, "a/journal", b"abc")
    await append(stub, "a/journal", b"def")
    await asyncio.wait_for(task, 10)
    call.cancel()
    assert bytes(received) == b"abcdef"


async def test_end_offset_and_metadata_only(broker: Broker, stub: pb_grpc.JournalStub) -> None:
    await create(stub, journal_spec("a/journal"))
    await append(stub, "a/journal", b"0123456789")
    bounded = await read_all(stub, pb.ReadRequest(journal="a/journal", offset=2, end_offset=5))
    assert [(r.offset, r.content) for r in bounded[1:]] == [(2, b"234")]
    meta = await read_all(stub, pb.ReadRequest(journal="a/journal", offset=4,
                                               metadata_only=True))
    assert len(meta) == 1 and meta[0].offset == 4 and meta[0].write_head == 10
    assert (meta[0].fragment.begin, meta[0].fragment.end) == (0, 10)


async def test_statuses_not_found_and_write_only(broker: Broker,
                                                 stub: pb_grpc.JournalStub) -> None:
    missing = await read_all(stub, pb.ReadRequest(journal="no/such/journal"))
    assert missing == [pb.ReadResponse(
        status=pb.JOURNAL_NOT_FOUND,
        header=pb.Header(process_id=broker.process_id, route=pb.Route(primary=-1),
                         etcd=missing[0].header.etcd))]
    spec = journal_spec("w/journal")
    spec.flags = pb.JournalSpec.O_WRONLY
    await create(stub, spec)
    out = await read_all(stub, pb.ReadRequest(journal="w/journal"))
    assert out == [pb.ReadResponse(status=pb.NOT_ALLOWED,
                                   header=local_header(broker, out[0].header.etcd))]
