"""Which of several endpoints is live: the first whose channel connects.

An address may list several endpoints separated by commas (`gazctl local
env` exports every broker and consumer of a stack). All are dialed at once
and the earliest in the list whose connection is up wins. A refused
connection fails at once, so when every endpoint refuses the first is used
and its RPC explains why; only connections that neither succeed nor fail (a
black-holed address, a server that never answers) need the deadline.

gazctl picks a live endpoint once per command; a failover channel
(`failover.py`) picks again whenever the endpoint it uses goes down.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import grpc

_SETTLED = (grpc.ChannelConnectivity.READY, grpc.ChannelConnectivity.TRANSIENT_FAILURE)


async def settle(channel: grpc.aio.Channel) -> grpc.ChannelConnectivity:
    """The channel's state once it connected or failed to."""
    state = channel.get_state(try_to_connect=True)
    while state not in _SETTLED:
        await channel.wait_for_state_change(state)
        state = channel.get_state(try_to_connect=True)
    return state


async def first_live(channels: Sequence[grpc.aio.Channel], limit: float) -> int:
    """The index of the first of `channels` that connects, else 0 when all refuse.

    Raises TimeoutError when none connected and some neither connected nor
    failed within `limit` seconds.
    """
    tasks = [asyncio.create_task(settle(channel)) for channel in channels]
    try:
        async with asyncio.timeout(limit):
            pending = set(tasks)
            while pending:
                _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for index, task in enumerate(tasks):
                    if task.done() and task.result() is grpc.ChannelConnectivity.READY:
                        return index
        return 0
    finally:
        for task in tasks:
            task.cancel()
        # Raises only if the caller itself is cancelled meanwhile, which must go on up.
        await asyncio.gather(*tasks, return_exceptions=True)


async def connects(channel: grpc.aio.Channel, limit: float) -> bool:
    """Whether `channel` is (or gets) connected within `limit` seconds."""
    try:
        async with asyncio.timeout(limit):
            return await settle(channel) is grpc.ChannelConnectivity.READY
    except TimeoutError:
        return False
