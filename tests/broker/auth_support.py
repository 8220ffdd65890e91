"""Helpers for tests of brokers with auth keys: tokens as call metadata, waits that carry them."""

from __future__ import annotations

import asyncio
import base64

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.server import auth

KEY = b"the test cluster's signing key, long enough for HS384"
KEYS = base64.b64encode(KEY).decode()


def bearer(capability: int = auth.ALL, selector: pb.LabelSelector | None = None,
           lifetime_s: float = auth.HOUR_S, now: float | None = None,
           key: bytes = KEY) -> tuple[tuple[str, str], ...]:
    """Call metadata carrying a token minted with `key`."""
    token = auth.mint(key, capability, selector, lifetime_s, now)
    return (("authorization", f"Bearer {token}"),)


def upsert(*specs: pb.JournalSpec, expect: int = 0) -> pb.ApplyRequest:
    """Create `specs` (expect 0), or write them whatever their revision (expect -1)."""
    return pb.ApplyRequest(changes=[pb.ApplyRequest.Change(upsert=s, expect_mod_revision=expect)
                                    for s in specs])


async def wait_primary(stub: pb_grpc.JournalStub, journal: str, members: int = 1) -> pb.Route:
    """The journal's route once it has `members` members and a primary."""
    sel = pb.LabelSelector(include=pb.LabelSet(labels=[pb.Label(name="name", value=journal)]))
    for _ in range(500):
        async for resp in stub.List(pb.ListRequest(selector=sel), metadata=bearer()):
            for j in resp.journals:
                if j.route.primary != -1 and len(j.route.members) == members:
                    return j.route
        await asyncio.sleep(0.02)
    raise AssertionError(f"{journal} never had {members} members and a primary")
