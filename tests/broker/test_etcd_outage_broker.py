"""An in-process broker while its etcd is down: errors, fencing and persisting on stop.

Each test runs its own etcd (the session's must stay up for everyone else)
and SIGKILLs it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.service import Broker
from gazette_core.testing.broker import broker_config, journal_spec, journal_stub
from gazette_core.testing.etcd import EtcdServer
from tests.broker.support import append, create

LEASE_S = 2


@pytest.fixture
def own_etcd() -> Iterator[EtcdServer]:
    with EtcdServer() as server:
        yield server


def _one_line_unavailable(err: grpc.aio.AioRpcError, wanted: str) -> None:
    assert err.code() == grpc.StatusCode.UNAVAILABLE, (err.code(), err.details())
    details = err.details() or ""
    assert wanted in details and "\n" not in details and "<class" not in details, details


async def test_apply_while_etcd_is_down_answers_unavailable_in_one_line(
        own_etcd: EtcdServer, tmp_path: Path) -> None:
    broker = Broker(broker_config(own_etcd.endpoint, str(tmp_path)))
    await broker.start()
    try:
        async with journal_stub(broker.endpoint) as stub:
            own_etcd.kill()
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.Apply(pb.ApplyRequest(changes=[pb.ApplyRequest.Change(
                    upsert=journal_spec("outage/b"))]), timeout=30)
            _one_line_unavailable(err.value, "etcd is unavailable")
            # List is served from the broker's mirror of etcd.
            listed = [r async for r in stub.List(pb.ListRequest(selector=pb.LabelSelector()))]
            assert listed[0].status == pb.OK
    finally:
        await broker.stop()


async def test_lease_lost_in_an_etcd_outage_fences_appends_and_stop_persists_spools(
        own_etcd: EtcdServer, tmp_path: Path) -> None:
    """With etcd gone, appends go on while the lease may be alive, are refused
    UNAVAILABLE once it surely expired, and stopping persists the spool."""
    root = tmp_path / "fragments"
    root.mkdir()
    broker = Broker(broker_config(own_etcd.endpoint, str(root), etcd_lease=LEASE_S))
    await broker.start()
    try:
        async with journal_stub(broker.endpoint) as stub:
            await create(stub, journal_spec("outage/a"))
            assert (await append(stub, "outage/a", b"acknowledged\n")).status == pb.OK
            own_etcd.kill()
            # The lease may still be alive: the current route keeps taking appends.
            assert (await append(stub, "outage/a", b"still taken\n")).status == pb.OK
            async with asyncio.timeout(3 * LEASE_S):
                await broker.lease_lost.wait()
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await append(stub, "outage/a", b"refused\n")
            _one_line_unavailable(err.value, "lost its Etcd lease")
    finally:
        await broker.stop()  # must not raise although etcd is gone
    spans = sorted(tuple(int(part, 16) for part in p.name.split("-")[:2])
                   for p in (root / "outage" / "a").iterdir())
    covered = 0
    for begin, end in spans:
        assert begin <= covered, f"a gap before {begin}: {spans}"
        covered = max(covered, end)
    assert covered == len(b"acknowledged\nstill taken\n"), spans


async def test_graceful_stop_while_etcd_is_down_still_persists_spools(
        own_etcd: EtcdServer, tmp_path: Path) -> None:
    """SIGTERM's path (drain, persist, revoke) with etcd gone: draining and
    revoking fail with a warning, and every spool is persisted regardless."""
    root = tmp_path / "fragments"
    root.mkdir()
    broker = Broker(broker_config(own_etcd.endpoint, str(root)))
    await broker.start()
    stopped = False
    try:
        async with journal_stub(broker.endpoint) as stub:
            await create(stub, journal_spec("outage/c"))
            assert (await append(stub, "outage/c", b"before the outage\n")).status == pb.OK
        own_etcd.kill()
        await broker.stop()  # the lease is still alive: this drains first
        stopped = True
    finally:
        if not stopped:
            await broker.stop()
    names = [p.name for p in (root / "outage" / "c").iterdir()]
    assert [tuple(int(part, 16) for part in n.split("-")[:2]) for n in names] == [
        (0, len(b"before the outage\n"))], names
