"""Consumer processes of the local stack: `gazctl local up --consumers N --app MOD:ATTR`.

Each runs `gazette consumer` with the stack's brokers, etcd and lease, its
own ports and a data directory under `DIR/consumers/<name>/`, and is
restarted by a later `up` like the brokers. The application module is
imported relative to the directory `up` was run from.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import TYPE_CHECKING

import grpc

from gazette_core.allocator.keys import member_key
from gazette_core.consumer.config import PREFIX_BASE
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol import consumer_pb2_grpc as cpb_grpc
from gazette_core.local import etcd_http
from gazette_core.local.probe import NOTHING, list_metadata

if TYPE_CHECKING:
    from gazette_core.local.stack import Process, Stack

MARKER = "gazette_core.consumer.main"


def etcd_prefix(app: str) -> str:
    """The consumer group's Etcd root for `app` (as `gazette consumer` defaults it)."""
    return PREFIX_BASE + app.rpartition(":")[2]


def argv(stack: Stack, c: Process) -> list[str]:
    return [sys.executable, "-m", MARKER, "--app", stack.app,
            "--consumer.host", "127.0.0.1", "--consumer.port", str(c.port),
            "--consumer.zone", c.zone, "--consumer.id", c.name,
            "--consumer.data-dir", str(stack.directory / "consumers" / c.name),
            "--broker.address", ",".join(b.endpoint for b in stack.brokers),
            "--etcd.address", stack.etcd.endpoint, "--etcd.prefix", etcd_prefix(stack.app),
            "--etcd.lease", str(stack.lease), "--log.level", "info"]


def env(stack: Stack) -> dict[str, str]:
    """Keys by environment (out of `ps`), and the app's directory on the import path."""
    path = os.pathsep.join(p for p in (stack.app_path, os.environ.get("PYTHONPATH", "")) if p)
    return {"CONSUMER_AUTH_KEYS": stack.auth_keys, "PYTHONPATH": path}


def forget_crashed(stack: Stack, c: Process) -> None:
    """End the lease of a consumer that died without revoking it (see stack._forget_crashed)."""
    etcd_http.revoke_lease_of(stack.etcd.endpoint,
                              member_key(etcd_prefix(stack.app), c.zone, c.name))


async def serves_async(endpoint: str, timeout: float = 1.0, auth_keys: str = "") -> bool:
    """Whether a consumer answers a Shard List RPC."""
    metadata = list_metadata(auth_keys)
    try:
        async with grpc.aio.insecure_channel(endpoint.split("://", 1)[-1]) as channel:
            resp = await cpb_grpc.ShardStub(channel).List(cpb.ListRequest(selector=NOTHING),
                                                          timeout=timeout,
                                                          metadata=metadata)
            return bool(resp.status == cpb.OK)
    except grpc.aio.AioRpcError:
        return False


def serves(endpoint: str, timeout: float = 1.0, auth_keys: str = "") -> bool:
    """Blocking form, for the process supervisor."""
    return asyncio.run(serves_async(endpoint, timeout, auth_keys))
