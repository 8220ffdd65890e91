"""Shared fixtures: one real etcd per test session, cleaned around every test."""

from __future__ import annotations

# isort: off
import gazette_core  # noqa: F401  (first: it turns gRPC's fork support off before gRPC loads)
# isort: on
import asyncio
import sys
from collections.abc import AsyncIterator, Iterator

import aetcd
import pytest
import pytest_asyncio
from aetcd import rpc

from gazette_core.keyspace.etcd_util import connect
from gazette_core.server.debug import awaiting
from gazette_core.testing.etcd import EtcdServer

# key=b"\0" with range_end=b"\0" addresses every key in etcd.
_ALL = {"key": b"\0", "range_end": b"\0"}


@pytest.fixture(scope="session")
def etcd_server() -> Iterator[EtcdServer]:
    with EtcdServer() as server:
        yield server


@pytest_asyncio.fixture(loop_scope="session")
async def etcd(etcd_server: EtcdServer) -> AsyncIterator[aetcd.Client]:
    """A connected client on an empty keyspace; every key and lease is removed afterwards."""
    client = await connect(etcd_server.endpoint)
    try:
        before = await client.kvstub.Range(rpc.RangeRequest(count_only=True, **_ALL))
        assert before.count == 0, f"etcd keyspace not empty before test: {before.count} keys"
        yield client
    finally:
        await client.kvstub.DeleteRange(rpc.DeleteRangeRequest(**_ALL))
        leases = await client.leasestub.LeaseLeases(rpc.LeaseLeasesRequest())
        for lease in leases.leases:
            try:
                await client.leasestub.LeaseRevoke(rpc.LeaseRevokeRequest(ID=lease.ID))
            except rpc.AioRpcError:
                pass  # Expired between listing and revoking.
        await client.close()


# How long before a test's timeout its asyncio tasks are written out.
_DUMP_LEAD_S = 5.0


@pytest_asyncio.fixture(loop_scope="session", autouse=True)
async def _tasks_shown_before_a_timeout(request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """A test about to time out writes every task of the loop, with what it awaits, to
    stderr: pytest-timeout shows only threads, and an asyncio test that waits for ever
    shows its loop idle in select()."""
    marker = request.node.get_closest_marker("timeout")
    timeout = float(marker.args[0]) if marker and marker.args else float(
        request.config.getini("timeout") or 0)
    if timeout <= _DUMP_LEAD_S:
        yield
        return
    handle = asyncio.get_running_loop().call_later(timeout - _DUMP_LEAD_S, _show_tasks,
                                                   request.node.nodeid)
    try:
        yield
    finally:
        handle.cancel()


def _show_tasks(test: str) -> None:
    print(f"\n+++ asyncio tasks of {test}, {_DUMP_LEAD_S:g}s before its timeout +++",
          file=sys.stderr)
    for task in asyncio.all_tasks():
        print(f"--- {task.get_name()}", file=sys.stderr)
        for line in awaiting(task.get_coro()):
            print(f"    {line}", file=sys.stderr)
