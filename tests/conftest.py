"""Shared fixtures: one real etcd per test session, cleaned around every test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import aetcd
import pytest
import pytest_asyncio
from aetcd import rpc

from gazette_core.keyspace.etcd_util import connect
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
