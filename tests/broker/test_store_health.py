"""Store health: the background checker's schedule, append gating, the FragmentStoreHealth RPC."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import aetcd
import grpc
import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.service import Broker
from gazette_core.broker.stores import health as health_mod
from gazette_core.broker.stores.base import FragmentStore
from gazette_core.broker.stores.health import FIRST_CHECK_PENDING, StoreHealth
from gazette_core.broker.stores.memory import MemoryStore
from gazette_core.broker.stores.url import parse_store_url
from gazette_core.testing.broker import broker_config, journal_spec, journal_stub, running_broker
from gazette_core.testing.etcd import EtcdServer
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


async def _refusal(stub: pb_grpc.JournalStub, req: pb.FragmentStoreHealthRequest) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.FragmentStoreHealth(req)
    return err.value.details() or ""


async def test_store_health_refuses_store_urls_leaving_the_file_root(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path) -> None:
    escaped = tmp_path.parent / "escaped"
    details = await _refusal(stub, pb.FragmentStoreHealthRequest(
        fragment_store="file:///../escaped/"))
    assert details == ('fragment_store: path of store URL "file:///../escaped/" must not have '
                       '".." segments')
    assert not escaped.exists()


@pytest.mark.parametrize(("check_delete", "prefix", "message"), [
    (True, "../escaped/", 'check_delete_prefix: "../escaped/" must not escape the store prefix'),
    (True, "a/../../escaped/", 'check_delete_prefix: "a/../../escaped" must be a clean path'),
    (False, "probe/", "check_delete_prefix: check_delete_prefix requires check_delete"),
])
async def test_store_health_validates_check_delete_prefix(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path, check_delete: bool,
        prefix: str, message: str) -> None:
    details = await _refusal(stub, pb.FragmentStoreHealthRequest(
        fragment_store="file:///", check_delete=check_delete, check_delete_prefix=prefix))
    assert details.startswith(message)
    assert not (tmp_path.parent / "escaped").exists()


async def test_a_store_linked_out_of_the_file_root_is_unhealthy_and_written_nowhere(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "link").symlink_to(outside)
    async with running_broker(broker_config(etcd_server.endpoint, str(root))) as broker, \
            journal_stub(broker.endpoint) as stub:
        resp = await stub.FragmentStoreHealth(pb.FragmentStoreHealthRequest(
            fragment_store="file:///link/", check_delete=True, check_delete_prefix="probe/"))
        assert resp.status == pb.FRAGMENT_STORE_UNHEALTHY
        assert "escapes the file root" in resp.store_health_error
        await create(stub, journal_spec("h/linked", stores=("file:///link/",)))
        # The journal's fragments cannot be listed nor its store checked, so the
        # append waits (for the first listing) or is refused; it never lands.
        msgs = [pb.AppendRequest(journal="h/linked"), pb.AppendRequest(content=b"x"),
                pb.AppendRequest()]
        try:
            appended = await stub.Append(iter(msgs), timeout=3)
            assert appended.status == pb.FRAGMENT_STORE_UNHEALTHY
        except grpc.aio.AioRpcError as err:
            assert err.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert list(outside.rglob("*")) == []  # no probe, no fragment (stopping persists spools)


async def test_apply_refuses_a_store_url_leaving_the_file_root(
        broker: Broker, stub: pb_grpc.JournalStub) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.Apply(pb.ApplyRequest(changes=[pb.ApplyRequest.Change(
            upsert=journal_spec("h/escaped", stores=("file:///../../escaped/",)))]))
    assert (err.value.details() or "").startswith(
        'changes[0].upsert.fragment.stores[0]: path of store URL "file:///../../escaped/" '
        'must not have ".." segments')


def _checker_tasks() -> set[str]:
    return {t.get_name() for t in asyncio.all_tasks() if t.get_name().startswith("store health ")}


async def test_checkers_unused_for_a_sweep_period_are_stopped(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path) -> None:
    for name in ("kept", "dropped"):
        (tmp_path / name).mkdir()
    config = broker_config(etcd_server.endpoint, str(tmp_path), store_health_sweep=0.3)
    async with running_broker(config) as broker, journal_stub(broker.endpoint) as stub:
        for url in ("file:///kept/", "file:///dropped/"):
            resp = await stub.FragmentStoreHealth(pb.FragmentStoreHealthRequest(
                fragment_store=url))
            assert resp.status == pb.OK
        assert {"store health file:///kept/", "store health file:///dropped/"} <= \
            _checker_tasks()
        async with asyncio.timeout(10):
            while "store health file:///dropped/" in _checker_tasks():
                await stub.FragmentStoreHealth(pb.FragmentStoreHealthRequest(
                    fragment_store="file:///kept/"))
                await asyncio.sleep(0.1)
        assert "store health file:///kept/" in _checker_tasks()
        # A swept store is checked afresh when it is asked about again.
        resp = await stub.FragmentStoreHealth(pb.FragmentStoreHealthRequest(
            fragment_store="file:///dropped/"))
        assert resp.status == pb.OK


async def test_checkers_beyond_the_limit_are_refused_but_journals_are_served(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path) -> None:
    config = broker_config(etcd_server.endpoint, str(tmp_path), store_health_limit=3)
    async with running_broker(config) as broker, journal_stub(broker.endpoint) as stub:
        for i in range(3):
            (tmp_path / f"s{i}").mkdir()
            resp = await stub.FragmentStoreHealth(pb.FragmentStoreHealthRequest(
                fragment_store=f"file:///s{i}/"))
            assert resp.status == pb.OK
        details = await _refusal(stub, pb.FragmentStoreHealthRequest(
            fragment_store="file:///s3/"))
        assert details == ("too many fragment stores under health checks (limit 3): "
                           "retry once unused checkers are swept")
        # A journal's own store is always checked, whatever the limit.
        (tmp_path / "journals").mkdir()
        await create(stub, journal_spec("h/limited", stores=("file:///journals/",)))
        assert (await append(stub, "h/limited", b"x")).status == pb.OK
        # Checkers a journal uses count as well.
        assert "store health file:///journals/" in _checker_tasks()


async def test_a_failing_store_logs_once_not_once_per_check(
        broker: Broker, stub: pb_grpc.JournalStub, quick_retries: None,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    urls = [f"file:///missing-{i}/" for i in range(5)]
    for url in urls:
        resp = await stub.FragmentStoreHealth(pb.FragmentStoreHealthRequest(fragment_store=url))
        assert resp.status == pb.FRAGMENT_STORE_UNHEALTHY
    for url in urls:  # several failed checks of each, at the quick retry delay
        health = broker.store_health.health(url)
        async with asyncio.timeout(10):
            while health.checks < 5:
                await asyncio.sleep(0.01)
    for url in urls:
        lines = [r for r in caplog.records if url in r.getMessage()]
        assert [r.levelno for r in lines if r.levelno >= logging.INFO] == [logging.WARNING]
