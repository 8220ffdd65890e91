"""Whatever an application raises, from any of its methods, fails its shard alone.

A real broker and etcd and a primary ShardReplica of the Counter app, made
to raise from one method at a time: ordinary exceptions, and also
SystemExit, KeyboardInterrupt, GeneratorExit and a CancelledError of its
own, none of which may end the process (here: the test's event loop). The
FAILED status says which method, where (the message's journal and offset)
and the exception's type.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest

from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.message.uuid import Flags
from tests.broker.support import append
from tests.consumer.runtime.apps import Counter, Num
from tests.consumer.runtime.conftest import Rig
from tests.consumer.runtime.support import SOURCE, shard_spec

FAILED = cpb.ReplicaStatus.FAILED


@dataclass
class Failing(Counter):
    """A Counter whose method `where` raises `error` (or, for new_store, returns `error`)."""

    where: str = ""
    error: Any = None

    def _raise(self, method: str) -> None:
        if method == self.where:
            raise self.error

    def new_message(self, spec: Any) -> Num:
        self._raise("new_message")
        return super().new_message(spec)

    async def new_store(self, shard: Any, recorder: Any) -> Any:
        if self.where == "new_store":
            return self.error
        store = await super().new_store(shard, recorder)
        if self.where == "restore_checkpoint":
            async def broken() -> Any:
                raise self.error
            store.restore_checkpoint = broken  # type: ignore[method-assign]
        return store

    def begin_txn(self, shard: Any, store: Any) -> None:
        self._raise("begin_txn")
        super().begin_txn(shard, store)

    async def consume_message(self, shard: Any, store: Any, envelope: Any,
                              publisher: Any) -> None:
        if envelope.message.n == 1:
            self._raise("consume_message")
        await super().consume_message(shard, store, envelope, publisher)

    def finalize_txn(self, shard: Any, store: Any, publisher: Any) -> None:
        self._raise("finalize_txn")
        super().finalize_txn(shard, store, publisher)

    def finished_txn(self, shard: Any, store: Any, commit: Any) -> None:
        self._raise("finished_txn")
        super().finished_txn(shard, store, commit)


async def failure(rig: Rig, app: Counter) -> tuple[str, int]:
    """The error of the primary running `app` once message 1 was written, and its offset."""
    host = rig.host(app)
    replica = await rig.replica(host, shard_spec(), "a", 0)
    begin = (await append(rig.stub, SOURCE, rig.producer.line(1, Flags.OUTSIDE_TXN))).commit.begin
    status = await host.wait_status(replica.assignment.key, FAILED)
    assert status.code == FAILED
    await replica.stop()  # also stops as it should after the failure
    return status.errors[0], int(begin)


KINDS: list[tuple[type[BaseException], tuple[Any, ...]]] = [
    (SystemExit, (7,)), (KeyboardInterrupt, ()), (GeneratorExit, ()),
    (asyncio.CancelledError, ("not a cancellation of the shard",)), (ValueError, ("bad",))]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k[0].__name__)
@pytest.mark.parametrize("method", ["begin_txn", "consume_message", "finalize_txn",
                                    "finished_txn", "restore_checkpoint"])
async def test_any_exception_of_an_app_method_fails_the_shard_naming_it(
        rig: Rig, method: str, kind: tuple[type[BaseException], tuple[Any, ...]]) -> None:
    error = kind[0](*kind[1])
    text, begin = await failure(rig, Failing(where=method, error=error))
    at = f" at {SOURCE}:{begin}" if method == "consume_message" else ""
    described = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    assert text == f"{method}{at}: {described}"


@pytest.mark.parametrize("error", [SystemExit(3), KeyError("new_message exploded")],
                         ids=lambda e: type(e).__name__)
async def test_new_message_failures_name_the_journal_and_offset(rig: Rig,
                                                               error: BaseException) -> None:
    text, begin = await failure(rig, Failing(where="new_message", error=error))
    assert text == f"new_message at {SOURCE}:{begin}: {type(error).__name__}: {error}"


@pytest.mark.parametrize(("returned", "shown"), [(None, "None"), (42, "a int")])
async def test_new_store_returning_no_store_says_what_it_returned(rig: Rig, returned: Any,
                                                                  shown: str) -> None:
    text, _ = await failure(rig, Failing(where="new_store", error=returned))
    assert text == (f"new_store: returned {shown}, expected a Store "
                    "(with restore_checkpoint, start_commit, destroy)")


async def test_a_malformed_uuid_is_reported_at_its_offset(rig: Rig) -> None:
    host = rig.host(Counter())
    replica = await rig.replica(host, shard_spec(), "a", 0)
    begin = (await append(rig.stub, SOURCE, b'{"uuid":"not-a-uuid","n":1}\n')).commit.begin
    status = await host.wait_status(replica.assignment.key, FAILED)
    assert status.errors[0] == (f"sequencing the message at {SOURCE}:{begin}: ValueError: "
                                "badly formed hexadecimal UUID string")


async def test_a_value_of_the_wrong_type_never_reaches_the_app(rig: Rig) -> None:
    app = Counter(kind="sqlite")
    host = rig.host(app)
    replica = await rig.replica(host, shard_spec(), "a", 0)
    line = rig.producer.line(1, Flags.OUTSIDE_TXN).replace(b'"n":1', b'"n":"five"')
    begin = (await append(rig.stub, SOURCE, line)).commit.begin
    status = await host.wait_status(replica.assignment.key, FAILED)
    assert status.errors[0] == (f"{SOURCE} offset {begin}: cannot decode message: "
                                "field Num.n: expected int, got string 'five'")
    assert app.consumed() == []
