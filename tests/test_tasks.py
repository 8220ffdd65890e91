"""Stopping background tasks: cancellation of the task vs. of its stopper."""

from __future__ import annotations

import asyncio

import pytest

from gazette_core.tasks import BackgroundTask, cancel_and_wait


async def test_stop_waits_for_the_task_to_unwind() -> None:
    unwound = asyncio.Event()

    async def body() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0)  # unwinding takes a turn of the loop
            unwound.set()

    task = BackgroundTask("body")
    task.start(body)
    await asyncio.sleep(0)
    await task.stop()
    assert unwound.is_set() and not task.running


async def test_a_stopper_cancelled_while_waiting_is_cancelled_itself() -> None:
    release = asyncio.Event()
    entered = asyncio.Event()

    async def slow_to_unwind() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            entered.set()
            await release.wait()  # keeps the stopper waiting

    target = asyncio.create_task(slow_to_unwind())
    await asyncio.sleep(0)
    stopper = asyncio.create_task(cancel_and_wait(target))
    await entered.wait()
    stopper.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stopper
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await target
