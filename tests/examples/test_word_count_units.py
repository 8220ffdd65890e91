"""Word-count below the framework: n-grams, the counter's cache and store, the API's
routing decisions against a stand-in service (the end-to-end test runs real consumers)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest

from examples.specs import example_journals, example_shards
from examples.word_count import api, ngrams
from examples.word_count.counter import Counter
from examples.word_count.messages import NGramCount
from examples.word_count.names import partition
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.service import Broker
from gazette_core.consumer.api.host import ShardResolution
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.keyspace.keyspace import KeyValue
from gazette_core.message.committed import read_committed
from gazette_core.message.mapping import modulo_mapping
from tests.broker.conftest import broker, stub  # noqa: F401  (fixtures)
from tests.broker.support import create
from tests.examples.app_support import (
    RecordingPublisher,
    StandInShard,
    ack,
    envelope,
    start_recorder,
)


def test_ngrams_are_words_and_pairs_keyed_by_first_word() -> None:
    assert ngrams.count_ngrams("The cat, the CAT!") == {
        "the": 2, "cat": 2, "the cat": 2, "cat the": 1}
    assert ngrams.key("the c") == "the"
    assert ngrams.matches("the cat", "the c") and ngrams.matches("the", "the")
    assert not ngrams.matches("theatre", "the") and not ngrams.matches("a the", "the")
    with pytest.raises(ValueError, match="no word"):
        ngrams.key("?!")


@dataclass
class StandInKeySpace:
    items: list[KeyValue]

    def prefixed(self, prefix: str) -> list[KeyValue]:
        return [kv for kv in self.items if kv.key.startswith(prefix)]


@dataclass
class StandInService:
    """A consumer service where this process is the primary of `local` shards only."""

    journals: Any
    local: set[str]
    root: str = "/consumers"
    keyspace: StandInKeySpace = field(default_factory=lambda: StandInKeySpace([]))
    remote: pb.Route = field(default_factory=lambda: pb.Route(
        members=[pb.ProcessSpec.ID(zone="z", suffix="other")], primary=0,
        endpoints=["http://127.0.0.1:1"]))

    def resolve(self, shard: str, *, proxied_header: pb.Header | None) -> ShardResolution:
        if shard in self.local:
            return ShardResolution(status=cpb.OK, header=pb.Header(), replica=object())
        return ShardResolution(status=cpb.OK, header=pb.Header(route=self.remote))


async def test_counter_counts_publishes_and_answers_queries_for_its_shards(
        broker: Broker, stub: pb_grpc.JournalStub, tmp_path: Path) -> None:  # noqa: F811
    await create(stub, *example_journals("word_count"))
    shards = example_shards("word_count")
    app = Counter()
    service = StandInService(stub, {s.id for s in shards})
    service.keyspace.items = [KeyValue(f"/consumers/items/{s.id}", b"", s, 1, 1, 1, 0)
                              for s in shards]
    app._service = service  # what init_application keeps

    assert await app.publish({"text": "the cat saw the dog"}) == {"n_grams": 8}
    published: dict[str, int] = {}
    for i in range(len(shards)):
        async for env in read_committed(stub, partition(i), lambda _: NGramCount(),
                                        block=False):
            msg = env.message
            assert isinstance(msg, NGramCount)
            assert ngrams.key(msg.n_gram) in msg.n_gram.split()[:1]
            published[msg.n_gram] = msg.count
    assert published == dict(ngrams.count_ngrams("the cat saw the dog"))

    # Each shard folds the deltas of its partition: cached, then flushed in finalize_txn.
    recorders = []
    for i, spec in enumerate(shards):
        recorder = await start_recorder(stub, f"examples/word-count/recovery-logs/{spec.id}",
                                        str(tmp_path / spec.id))
        recorders.append(recorder)
        shard = StandInShard(spec)
        store = await app.new_store(shard, recorder)  # type: ignore[arg-type]
        publisher = RecordingPublisher()
        for _ in range(2):  # two transactions, the same deltas in each
            async for env in read_committed(stub, partition(i), lambda _: NGramCount(),
                                            block=False):
                app.consume_message(shard, store, env, publisher)  # type: ignore[arg-type]
            app.consume_message(shard, store, envelope(partition(i), ack(NGramCount())),  # type: ignore[arg-type]
                                publisher)  # type: ignore[arg-type]
            await app.finalize_txn(shard, store, publisher)  # type: ignore[arg-type]
            await store.start_commit(cpb.Checkpoint(), None)
    assert await app.query({"prefix": "The"}) == {
        "shard": app._shard_reading(_journal_of(app, "the")),
        "grams": [{"n_gram": "the", "count": 4}, {"n_gram": "the cat", "count": 2},
                  {"n_gram": "the dog", "count": 2}]}

    # A shard primary elsewhere: the query is forwarded (here to nobody: unavailable).
    service.local = set()
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await app.query({"prefix": "cat"})
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    with pytest.raises(api.QueryError, match="NOT_SHARD_PRIMARY"):
        await app.query({"prefix": "cat", "proxied": True})
    for store in app._stores.values():
        await store.close()
    for recorder in recorders:
        await recorder.stop()


def _journal_of(app: Counter, word: str) -> str:
    assert app._ready is not None
    partitions, _ = app._ready.result()
    journal, _ = modulo_mapping(lambda _: word, partitions)(NGramCount())
    return journal
