"""The pulse on a real broker: flush-interval rolls of idle journals, and auto-suspension."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import aetcd
import pytest

from gazette_core.broker import replica as replica_mod
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.protocol.durations_ext import from_seconds
from gazette_core.broker.pulse import AUTO_SUSPEND_STABLE_PULSES
from gazette_core.broker.service import Broker
from gazette_core.testing.broker import broker_config, journal_spec, journal_stub, running_broker
from gazette_core.testing.etcd import EtcdServer
from tests.broker.support import append, create
from tests.broker.test_persistence import persisted

Level = pb.JournalSpec.Suspend


async def test_pulse_rolls_and_persists_an_idle_journal_past_its_flush_interval(
        broker: Broker, stub: pb_grpc.JournalStub, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = journal_spec("pulse/flush")
    spec.fragment.flush_interval.CopyFrom(from_seconds(60))
    await create(stub, spec)
    assert (await append(stub, "pulse/flush", b"idle")).status == pb.OK
    await broker.pulse.pulse("pulse/flush")
    listed = await stub.ListFragments(pb.FragmentsRequest(journal="pulse/flush"))
    assert [f.spec.mod_time for f in listed.fragments] == [0]  # within the interval: kept local

    # Two minutes later the first append's flush bucket has passed.
    later = time.time() + 120
    monkeypatch.setattr(replica_mod, "time", SimpleNamespace(time=lambda: later))
    await broker.pulse.pulse("pulse/flush")

    frags = await persisted(stub, "pulse/flush", 1)
    assert [(f.spec.begin, f.spec.end) for f in frags if f.spec.mod_time] == [(0, 4)]


async def _suspend_level(stub: pb_grpc.JournalStub, journal: str) -> int:
    sel = pb.LabelSelector(include=pb.LabelSet(labels=[pb.Label(name="name", value=journal)]))
    async for resp in stub.List(pb.ListRequest(selector=sel)):
        return int(resp.journals[0].spec.suspend.level)
    raise AssertionError("not listed")


@pytest.mark.parametrize("auto", [True, False])
async def test_auto_suspend_after_stable_pulses(etcd: aetcd.Client, etcd_server: EtcdServer,
                                                tmp_path: Path, auto: bool) -> None:
    config = replace(broker_config(etcd_server.endpoint, str(tmp_path)), auto_suspend=auto)
    async with running_broker(config) as broker, journal_stub(broker.endpoint) as stub:
        await create(stub, journal_spec("pulse/idle"))
        for _ in range(AUTO_SUSPEND_STABLE_PULSES):
            assert (await broker.pulse.pulse("pulse/idle")) is not None
            assert await _suspend_level(stub, "pulse/idle") == Level.NONE

        await broker.pulse.pulse("pulse/idle")

        assert await _suspend_level(stub, "pulse/idle") == (Level.FULL if auto else Level.NONE)
