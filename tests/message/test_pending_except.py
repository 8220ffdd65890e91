"""AppendService.pending_except: the last unsettled batch of every journal but one."""

from __future__ import annotations

import asyncio

from gazette_core.broker.client.append_service import AppendService
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.testing.broker import journal_spec
from tests.broker.support import create


async def test_pending_except_waits_for_every_other_journal(
        stub: pb_grpc.JournalStub) -> None:
    await create(stub, *(journal_spec(f"pe/{n}") for n in ("log", "a", "b")))
    async with AppendService(stub, max_batch_bytes=8) as svc:
        assert svc.pending_except(None) == []
        svc.enqueue("pe/log", b"recovery log bytes")
        a_batches = [svc.enqueue("pe/a", b"0123456789") for _ in range(3)]  # 3 batches
        b_batch = svc.enqueue("pe/b", b"x")
        pending = svc.pending_except("pe/log")
        # Only the newest batch per journal: it settles after the earlier ones.
        assert pending == [a_batches[-1], b_batch]
        assert len({id(h) for h in a_batches}) == 3
        await asyncio.gather(*pending)
        assert all(h.done() for h in a_batches)
        assert svc.pending_except("pe/log") == []


async def test_a_batch_being_appended_is_still_pending(
        stub: pb_grpc.JournalStub) -> None:
    await create(stub, journal_spec("pe/one"))
    async with AppendService(stub) as svc:
        handle = svc.enqueue("pe/one", b"data")
        await asyncio.sleep(0)  # The sender takes the batch off the queue.
        assert svc.pending_except(None) == [handle]
        await handle
        assert svc.pending_except(None) == []
