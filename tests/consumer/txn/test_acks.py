"""ACK appends that wait for their commit but keep their place in the journal."""

from __future__ import annotations

import asyncio

import pytest

from gazette_core.broker.client.retry_reader import read_all
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.consumer.txn.acks import TxnAppendService
from gazette_core.errors import GazetteError
from tests.consumer.runtime.support import OUT, create_journals


async def test_writes_behind_a_held_ack_land_after_it(stub: pb_grpc.JournalStub) -> None:
    await create_journals(stub, recovery_logs=())
    commit: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    async with TxnAppendService(stub) as service:
        ack = service.append_after(OUT, b"ack\n", commit)
        later = service.enqueue(OUT, b"next-1\n")
        written = service.write(OUT, b"next-2\n")
        await asyncio.sleep(0.1)
        assert await read_all(stub, OUT) == b""  # Nothing before the commit resolves.
        assert service.pending_except(None) == []  # Not yet handed to the service.
        commit.set_result(None)
        await asyncio.gather(ack, later, written)
    assert await read_all(stub, OUT) == b"ack\nnext-1\nnext-2\n"
    assert (await written).begin == len(b"ack\nnext-1\n")


async def test_a_failed_commit_writes_neither_the_ack_nor_what_waited(
        stub: pb_grpc.JournalStub) -> None:
    await create_journals(stub, recovery_logs=())
    commit: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    async with TxnAppendService(stub) as service:
        ack = service.append_after(OUT, b"ack\n", commit)
        later = service.enqueue(OUT, b"next\n")
        commit.set_exception(GazetteError("commit failed"))
        for pending in (ack, later):
            with pytest.raises(GazetteError, match="commit failed"):
                await pending
        after = service.enqueue(OUT, b"after\n")  # The journal is free again.
        await after
    assert await read_all(stub, OUT) == b"after\n"
