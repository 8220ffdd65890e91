"""Calling application methods written either sync or async."""

from __future__ import annotations

import asyncio
import gc
import sys
from typing import Any

import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.app import AppError, call, call_optional, guarded, message_factory


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


def test_an_abandoned_guarded_await_closes_without_an_app_failure() -> None:
    """Collecting the task of a suspended `guarded` closes its coroutine with GeneratorExit,
    which is no failure of the app and must not come out as an AppError."""
    seen: list[BaseException | None] = []
    hook, sys.unraisablehook = sys.unraisablehook, lambda u: seen.append(u.exc_value)
    try:
        loop = asyncio.new_event_loop()
        loop.set_exception_handler(lambda _loop, _context: None)  # "destroyed but pending"
        pending = loop.create_future()
        task = loop.create_task(guarded("start_commit", pending))
        loop.run_until_complete(asyncio.sleep(0))  # the task now waits on `pending`
        loop.close()
        del task, pending
        gc.collect()
    finally:
        sys.unraisablehook = hook
    assert seen == []


async def test_a_generator_exit_the_awaited_app_code_raises_is_its_failure() -> None:
    async def commit() -> None:
        await asyncio.sleep(0)
        raise GeneratorExit

    with pytest.raises(AppError, match="start_commit: GeneratorExit"):
        await guarded("start_commit", commit())
