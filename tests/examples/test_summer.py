"""The summer's logic under hand-driven transactions, on real recorded stores."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from examples.stream_sum import crc64
from examples.stream_sum.messages import Chunk, Sum
from examples.stream_sum.names import partition
from examples.stream_sum.summer import StreamSumError, Summer
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.service import Broker
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.store.interface import Store
from gazette_core.consumer.store.sqlite import SQLiteStore
from tests.broker.conftest import broker, stub  # noqa: F401  (fixtures)
from tests.examples.app_support import (
    RecordingPublisher,
    StandInShard,
    ack,
    envelope,
    new_log,
    start_recorder,
)

LOG = "examples/test/recovery-logs/chunks-part-000"
SOURCE = partition(0)


def shard_with_store(kind: str) -> StandInShard:
    spec = cpb.ShardSpec(id="chunks-part-000")
    spec.labels.labels.add(name="store", value=kind)
    return StandInShard(spec)


async def txn(app: Summer, shard: StandInShard, store: Store, chunks: list[Chunk],
              offset: int) -> RecordingPublisher:
    """One transaction: consume `chunks`, finalize, commit through `offset`."""
    publisher = RecordingPublisher()
    for chunk in chunks:
        await app.consume_message(shard, store, envelope(SOURCE, chunk), publisher)  # type: ignore[arg-type]
    await app.finalize_txn(shard, store, publisher)  # type: ignore[arg-type]
    checkpoint = cpb.Checkpoint()
    checkpoint.sources[SOURCE].read_through = offset
    await store.start_commit(checkpoint, None)
    return publisher


async def _close(store: Store) -> None:
    if isinstance(store, SQLiteStore):
        await store.close()


@pytest.mark.parametrize("kind", ["sqlite", "json"])
async def test_summer_sums_streams_across_transactions_and_recovery(
        kind: str, broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path) -> None:  # noqa: F811
    rng = random.Random(3)
    data = [rng.randbytes(32) for _ in range(3)]
    shard = shard_with_store(kind)
    await new_log(stub, LOG)
    app = Summer()
    recorder = await start_recorder(stub, LOG, str(tmp_path / "first"))
    store = await app.new_store(shard, recorder)  # type: ignore[arg-type]

    first = await txn(app, shard, store, [Chunk.of("a", 1, data[0]), Chunk.of("b", 1, data[1]),
                                          ack(Chunk()), Chunk.of("a", 2, data[2])], 10)
    assert first.uncommitted == [] and first.committed == []
    second = await txn(app, shard, store, [Chunk.of("a", 3, b"")], 20)
    assert second.uncommitted == [Sum(id="a", seq_no=3,
                                      value=crc64.checksum(data[0] + data[2]))]
    await _close(store)
    await recorder.stop()

    # Another process rebuilds the store from the log: b's running sum is there, a is done.
    recorder = await start_recorder(stub, LOG, str(tmp_path / "second"))
    app = Summer()
    store = await app.new_store(shard, recorder)  # type: ignore[arg-type]
    assert (await store.restore_checkpoint()).sources[SOURCE].read_through == 20
    third = await txn(app, shard, store, [Chunk.of("b", 2, b""), Chunk.of("a", 1, data[0])], 30)
    assert third.uncommitted == [Sum(id="b", seq_no=2, value=crc64.checksum(data[1]))]
    await _close(store)
    await recorder.stop()


async def test_summer_refuses_a_chunk_out_of_sequence(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path) -> None:  # noqa: F811
    shard = shard_with_store("sqlite")
    await new_log(stub, LOG)
    app = Summer()
    recorder = await start_recorder(stub, LOG, str(tmp_path / "store"))
    store = await app.new_store(shard, recorder)  # type: ignore[arg-type]
    publisher = RecordingPublisher()
    await app.consume_message(shard, store, envelope(SOURCE, Chunk.of("a", 1, b"x")),  # type: ignore[arg-type]
                              publisher)  # type: ignore[arg-type]
    with pytest.raises(StreamSumError, match="stream a: chunk 3 after 1"):
        await app.consume_message(shard, store, envelope(SOURCE, Chunk.of("a", 3, b"y")),  # type: ignore[arg-type]
                                  publisher)  # type: ignore[arg-type]
    await _close(store)
    await recorder.stop()
