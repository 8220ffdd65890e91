"""Calling application methods written either sync or async."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.app import call, call_optional, message_factory


class Mixed:
    def new_message(self, spec: pb.JournalSpec) -> str:
        return f"sync {spec.name}"

    async def finalize_txn(self, value: int) -> int:
        await asyncio.sleep(0)
        return value + 1


class AsyncMessages:
    async def new_message(self, spec: pb.JournalSpec) -> str:
        return f"async {spec.name}"


class WaitingMessages:
    async def new_message(self, spec: pb.JournalSpec) -> str:
        await asyncio.sleep(0)
        return "never"


async def test_call_awaits_only_what_is_awaitable() -> None:
    app = Mixed()
    assert await call(app.new_message, pb.JournalSpec(name="a/b")) == "sync a/b"
    assert await call(app.finalize_txn, 1) == 2
    assert await call_optional(app, "finalize_txn", 2) == 3
    assert await call_optional(app, "begin_txn", 2) is None


def test_message_factory_runs_new_message_sync_or_async() -> None:
    spec = pb.JournalSpec(name="a/b")
    assert message_factory(Mixed())(spec) == "sync a/b"
    assert message_factory(AsyncMessages())(spec) == "async a/b"
    waiting: Any = message_factory(WaitingMessages())
    with pytest.raises(TypeError, match="must not wait"):
        waiting(spec)
