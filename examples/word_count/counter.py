"""The word-count consumer: N-gram counts per shard, and the NGram API on every consumer.

`consume_message` adds each delta to an in-memory cache; `finalize_txn` flushes
the cache into the shard's SQLite store in one statement batch, so a hot
N-gram costs one write per transaction, not one per message.

The API (api.py) is registered on the consumer's own gRPC server by
`init_application`. Publish splits text into N-grams and publishes each count
with `publish_committed` to the partition of its first word. Query maps its
prefix to that partition, finds the shard reading it, and answers from the
local store when this process is that shard's primary; otherwise it forwards
the query to the primary, which answers from its store.
"""

from __future__ import annotations

import asyncio
import inspect
from collections import Counter as Tally
from typing import TYPE_CHECKING, Any

import apsw
import grpc

from examples.word_count import api, ngrams
from examples.word_count.messages import NGramCount
from examples.word_count.names import MESSAGE_TYPE, NGRAM_TYPE
from gazette_core.broker.client.append_service import AppendService
from gazette_core.broker.client.channel import dial
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.store.interface import Store
from gazette_core.consumer.store.sqlite import SQLiteStore
from gazette_core.message.mapping import Partitions, modulo_mapping
from gazette_core.message.publisher import Publisher
from gazette_core.message.uuid import Flags, get_flags

if TYPE_CHECKING:
    from gazette_core.consumer.app import InitArgs
    from gazette_core.consumer.recoverylog.recorder import Recorder
    from gazette_core.consumer.shard import Shard
    from gazette_core.message.interfaces import Envelope, Message

SCHEMA = "CREATE TABLE IF NOT EXISTS counts (n_gram TEXT PRIMARY KEY, count INTEGER NOT NULL)"
UPSERT = ("INSERT INTO counts VALUES (?, ?) ON CONFLICT(n_gram)"
          " DO UPDATE SET count = count + excluded.count")


def ngram_selector() -> pb.LabelSelector:
    return pb.LabelSelector(include=pb.LabelSet(
        labels=[pb.Label(name=MESSAGE_TYPE, value=NGRAM_TYPE)]))


class Counter:
    """The word-count Application: `gazette consumer --app examples.word_count:Counter`."""

    def __init__(self) -> None:
        self._cache: dict[str, Tally[str]] = {}  # per shard: n-gram -> delta this txn
        self._stores: dict[str, SQLiteStore] = {}  # stores of shards made primary here
        self._service: Any = None
        self._ready: asyncio.Task[tuple[Partitions, Publisher]] | None = None

    # -- the Application -----------------------------------------------------

    async def new_store(self, shard: Shard, recorder: Recorder | None) -> Store:
        if recorder is None:
            raise ValueError(f"shard {shard.id} needs a recovery log")
        store = await SQLiteStore.open(recorder.directory, recorder, bootstrap_sql=SCHEMA)
        self._cache[shard.id] = Tally()
        self._stores[shard.id] = store
        return store

    def new_message(self, spec: pb.JournalSpec) -> Message:
        return NGramCount()

    def consume_message(self, shard: Shard, store: Store, env: Envelope,
                        publisher: Publisher) -> None:
        msg = env.message
        assert isinstance(msg, NGramCount)
        if get_flags(msg.get_uuid()) != Flags.ACK_TXN:
            self._cache[shard.id][msg.n_gram] += msg.count

    async def finalize_txn(self, shard: Shard, store: Store, publisher: Publisher) -> None:
        cache, self._cache[shard.id] = self._cache[shard.id], Tally()
        if cache:
            assert isinstance(store, SQLiteStore)
            await store.run(lambda conn: _flush(conn, cache))

    def init_application(self, args: InitArgs) -> None:
        self._service = args.service
        args.server.add_generic_rpc_handlers([api.service_handler(self.publish, self.query)])

    # -- the NGram API -------------------------------------------------------

    async def _client(self) -> tuple[Partitions, Publisher]:
        """The watched partitions and a publisher on the consumer's broker client."""
        if self._ready is None:
            self._ready = asyncio.ensure_future(self._start_client())
        return await asyncio.shield(self._ready)

    async def _start_client(self) -> tuple[Partitions, Publisher]:
        partitions = Partitions(self._service.journals, ngram_selector())
        await partitions.start()
        appender = AppendService(self._service.journals)
        appender.start()
        return partitions, Publisher(appender)

    async def publish(self, request: dict[str, Any]) -> dict[str, Any]:
        partitions, publisher = await self._client()
        mapping = modulo_mapping(lambda m: ngrams.key(m.n_gram), partitions)  # type: ignore[attr-defined]
        counts = ngrams.count_ngrams(str(request["text"]))
        appends = [publisher.publish_committed(mapping, NGramCount(n_gram=g, count=n))
                   for g, n in sorted(counts.items())]
        await asyncio.gather(*appends)
        return {"n_grams": len(counts)}

    async def query(self, request: dict[str, Any]) -> dict[str, Any]:
        prefix = str(request["prefix"]).lower().strip()
        partitions, _ = await self._client()
        journal, _ = modulo_mapping(lambda _: ngrams.key(prefix), partitions)(NGramCount())
        shard = self._shard_reading(journal)
        resolution = self._service.resolve(shard, proxied_header=None)
        if inspect.isawaitable(resolution):
            resolution = await resolution
        if resolution.status != cpb.OK:
            raise api.QueryError(grpc.StatusCode.UNAVAILABLE,
                                 f"shard {shard}: {cpb.Status.Name(resolution.status)}")
        if resolution.replica is not None and shard in self._stores:
            grams = await _query_store(self._stores[shard], prefix)
            return {"shard": shard, "grams": grams}
        if request.get("proxied"):
            raise api.QueryError(grpc.StatusCode.UNAVAILABLE,
                                 f"shard {shard}: NOT_SHARD_PRIMARY")
        return await self._forward(resolution.header.route, {"prefix": prefix, "proxied": True})

    def _shard_reading(self, journal: str) -> str:
        service = self._service
        for kv in service.keyspace.prefixed(f"{service.root}/items/"):
            spec = kv.decoded
            if isinstance(spec, cpb.ShardSpec) and any(s.journal == journal
                                                       for s in spec.sources):
                return spec.id
        raise api.QueryError(grpc.StatusCode.NOT_FOUND, f"no shard reads {journal}")

    async def _forward(self, route: pb.Route, request: dict[str, Any]) -> dict[str, Any]:
        endpoint = route.endpoints[route.primary]
        return await api.call(dial(endpoint), api.QUERY, request)


def _flush(conn: apsw.Connection, cache: Tally[str]) -> None:
    conn.executemany(UPSERT, sorted(cache.items()))


async def _query_store(store: SQLiteStore, prefix: str) -> list[dict[str, Any]]:
    rows = await store.execute(
        "SELECT n_gram, count FROM counts WHERE n_gram >= ? AND n_gram < ? ORDER BY n_gram",
        (prefix, prefix + "\uffff"))
    return [{"n_gram": g, "count": int(n)} for g, n in rows if ngrams.matches(g, prefix)]
