"""Which broker a gazctl command dials: the first live one of `--broker.address`.

The address may list several endpoints separated by commas (`gazctl local
env` exports every broker of the stack), so a command still works after the
first broker dies. All are dialed at once and the earliest in the list whose
connection is up wins; a single endpoint behaves exactly as in Go's gazctl.
A refused connection fails at once and the RPC's own error says why, so when
every endpoint refuses, the first is used and its RPC explains; only
connections that neither succeed nor fail (a black-holed address, a server
that never answers) need the deadline.
"""

from __future__ import annotations

import asyncio
import contextlib

import grpc

from gazette_core.broker.client.channel import dial

_SETTLED = (grpc.ChannelConnectivity.READY, grpc.ChannelConnectivity.TRANSIENT_FAILURE)


async def _settle(channel: grpc.aio.Channel) -> grpc.ChannelConnectivity:
    """The channel's state once it connected or failed to."""
    state = channel.get_state(try_to_connect=True)
    while state not in _SETTLED:
        await channel.wait_for_state_change(state)
        state = channel.get_state(try_to_connect=True)
    return state


async def pick_live(targets: list[str], limit: float) -> str:
    """The first of `targets` that connects, else the first when all refuse.

    Raises TimeoutError when none connected and some neither connected nor
    failed within `limit` seconds.
    """
    channels = [dial(target) for target in targets]  # each address is checked first
    tasks = [asyncio.create_task(_settle(channel)) for channel in channels]
    try:
        async with asyncio.timeout(limit):
            pending = set(tasks)
            while pending:
                _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for target, task in zip(targets, tasks, strict=True):
                    if task.done() and task.result() is grpc.ChannelConnectivity.READY:
                        return target
        return targets[0]
    finally:
        for task in tasks:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*tasks, return_exceptions=True)


async def connects(target: str, limit: float) -> bool:
    """Whether `target` takes a connection within `limit` seconds."""
    try:
        async with asyncio.timeout(limit):
            return await _settle(dial(target)) is grpc.ChannelConnectivity.READY
    except TimeoutError:
        return False
