"""Which endpoint a gazctl command dials: the first live one of its address.

The address may list several endpoints separated by commas; the rules are
the client library's (`gazette_core.broker.client.endpoints`), applied once
per command, so a single endpoint behaves exactly as in Go's gazctl.
"""

from __future__ import annotations

from gazette_core.broker.client import endpoints
from gazette_core.broker.client.channel import dial


async def pick_live(targets: list[str], limit: float) -> str:
    """The first of `targets` that connects, else the first when all refuse.

    Raises TimeoutError when none connected and some neither connected nor
    failed within `limit` seconds.
    """
    # Each address is checked by dial() before anything connects.
    return targets[await endpoints.first_live([dial(target) for target in targets], limit)]


async def connects(target: str, limit: float) -> bool:
    """Whether `target` takes a connection within `limit` seconds."""
    return await endpoints.connects(dial(target), limit)
