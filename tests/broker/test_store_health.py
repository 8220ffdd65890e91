"""Store health: the background checker's schedule, append gating, the FragmentStoreHealth RPC."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.service import Broker
from gazette_core.broker.stores import health as health_mod
from gazette_core.broker.stores.base import FragmentStore
from gazette_core.broker.stores.health import FIRST_CHECK_PENDING, StoreHealth
from gazette_core.broker.stores.memory import MemoryStore
from gazette_core.broker.stores.url import parse_store_url
from gazette_core.testing.broker import journal_spec
from tests.broker.support import append, create

BAD_STORE = "file:///?bogus=1"
BAD_REASON = "unknown query parameter 'bogus' in store URL 'file:///?bogus=1'"


@pytest.fixture
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(health_mod, "FAILURE_DELAYS_S", (0.0, 0.01))


class Scripted:
    """A check answering from a script, then healthy; counts its calls."""

    def __init__(self, *errors: str) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self, store: FragmentStore) -> str:
        self.calls += 1
        return self.errors.pop(0) if self.errors else ""


def memory_store() -> FragmentStore:
    return MemoryStore(parse_store_url("memory://health/"), "")


async def test_appends_wait_out_failures_until_a_check_passes(quick_retries: None) -> None:
    checks = Scripted("disk full", "disk full", "disk full")
    health = StoreHealth(memory_store(), checks)
    assert health.error == FIRST_CHECK_PENDING
    health.start()
    try:
        assert await health.await_healthy() == ""
        assert checks.calls == 4
    finally:
        await health.stop()


async def test_appends_give_up_after_five_failed_rechecks(quick_retries: None) -> None:
    checks = Scripted(*["disk full"] * 100)
    health = StoreHealth(memory_store(), checks)
    health.start()
    try:
        assert await health.await_healthy() == "disk full"
        assert checks.calls == 1 + 5 + 1  # the first check, five re-checks, then one more
    finally:
        await health.stop()


async def test_a_real_store_passes_the_round_trip() -> None:
    store = memory_store()
    assert await health_mod.check_store(store) == ""


async def test_append_to_a_journal_on_an_unusable_store_is_refused_with_the_reason(
        broker: Broker, stub: pb_grpc.JournalStub, quick_retries: None) -> None:
    await create(stub, journal_spec("h/bad", stores=(BAD_STORE,)))

    resp = await append(stub, "h/bad", b"x")

    assert resp.status == pb.FRAGMENT_STORE_UNHEALTHY
    assert resp.store_health_error == (f"fragment store {BAD_STORE!r} is unusable: "
                                       f"{BAD_REASON}")


async def test_store_health_rpc_reports_healthy_and_unhealthy_stores(
        broker: Broker, stub: pb_grpc.JournalStub) -> None:
    good = await stub.FragmentStoreHealth(pb.FragmentStoreHealthRequest(
        fragment_store="file:///"))
    bad = await stub.FragmentStoreHealth(pb.FragmentStoreHealthRequest(
        fragment_store=BAD_STORE))

    assert good.status == pb.OK
    assert (bad.status, bad.store_health_error) == (
        pb.FRAGMENT_STORE_UNHEALTHY, f"fragment store {BAD_STORE!r} is unusable: {BAD_REASON}")


async def test_check_delete_writes_and_removes_a_probe_under_the_prefix(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path) -> None:
    resp = await stub.FragmentStoreHealth(pb.FragmentStoreHealthRequest(
        fragment_store="file:///", check_delete=True, check_delete_prefix="probe/"))

    assert resp.status == pb.OK
    probe_dir = tmp_path / "probe" / ".gazette-delete-probe"
    assert probe_dir.is_dir() and list(probe_dir.iterdir()) == []


async def test_health_checks_stop_with_the_broker(broker: Broker,
                                                   stub: pb_grpc.JournalStub) -> None:
    await stub.FragmentStoreHealth(pb.FragmentStoreHealthRequest(fragment_store="file:///"))
    await broker.store_health.stop()
    await asyncio.sleep(0)
    assert [t for t in asyncio.all_tasks() if t.get_name().startswith("store health")] == []
