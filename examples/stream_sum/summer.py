"""The summer: a consumer keeping a running CRC-64/ECMA per stream in its store.

Chunks of a stream arrive in order on one partition. The running sums of the
transaction's streams are cached in memory, read from the store on a miss and
written back in `finalize_txn`, so the store is touched once per stream per
transaction. When a stream's empty last chunk arrives, its Sum is published
with `publish_uncommitted`: readers see it only once the transaction that
produced it has committed, exactly once.

The shard label `store` picks the store: `sqlite` (the default) or `json`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import apsw

from examples.stream_sum import crc64
from examples.stream_sum.messages import Chunk, Sum
from examples.stream_sum.names import NDJSON, SUMS_JOURNAL
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.store.interface import Store
from gazette_core.consumer.store.json_file import JSONFileStore
from gazette_core.consumer.store.sqlite import SQLiteStore
from gazette_core.message.framing import Framing, framing_for
from gazette_core.message.interfaces import Envelope, Message
from gazette_core.message.uuid import Flags, get_flags

if TYPE_CHECKING:
    from gazette_core.consumer.recoverylog.recorder import Recorder
    from gazette_core.consumer.shard import Shard
    from gazette_core.message.publisher import Publisher

SCHEMA = "CREATE TABLE IF NOT EXISTS sums (id TEXT PRIMARY KEY, seq_no INTEGER, value INTEGER)"
_FINISHED = (-1, 0)  # a cached stream whose Sum went out: dropped from the store
_SIGN = 1 << 63


class StreamSumError(Exception):
    """A chunk out of sequence: a message was lost, duplicated or reordered."""


def store_kind(shard: Shard) -> str:
    for label in shard.spec.labels.labels:
        if label.name == "store":
            return label.value
    return "sqlite"


def sums_mapping(_: Message) -> tuple[str, Framing]:
    return SUMS_JOURNAL, framing_for(NDJSON)


class Summer:
    """The stream-sum Application: `gazette consumer --app examples.stream_sum:Summer`."""

    def __init__(self) -> None:
        # Per shard: stream id -> (last seq_no, running sum) changed in this transaction.
        self._pending: dict[str, dict[str, tuple[int, int]]] = {}

    async def new_store(self, shard: Shard, recorder: Recorder | None) -> Store:
        if recorder is None:
            raise StreamSumError(f"shard {shard.id} needs a recovery log")
        self._pending[shard.id] = {}
        kind = store_kind(shard)
        if kind == "json":
            return await JSONFileStore.open(recorder.directory, recorder, initial_state={})
        if kind == "sqlite":
            return await SQLiteStore.open(recorder.directory, recorder, bootstrap_sql=SCHEMA)
        raise StreamSumError(f"shard {shard.id}: label store={kind!r} is not sqlite or json")

    def new_message(self, spec: pb.JournalSpec) -> Message:
        return Chunk()

    async def consume_message(self, shard: Shard, store: Store, env: Envelope,
                              publisher: Publisher) -> None:
        chunk = env.message
        assert isinstance(chunk, Chunk)
        if get_flags(chunk.get_uuid()) == Flags.ACK_TXN:
            return  # ACKs reach the application too; they carry no chunk
        pending = self._pending[shard.id]
        seq_no, value = pending.get(chunk.id) or await _load(store, chunk.id)
        if chunk.seq_no != seq_no + 1:
            raise StreamSumError(f"stream {chunk.id}: chunk {chunk.seq_no} after {seq_no}"
                                 f" (at {env.journal}:{env.begin})")
        data = chunk.payload()
        if data:
            pending[chunk.id] = (chunk.seq_no, crc64.update(value, data))
        else:
            publisher.publish_uncommitted(sums_mapping,
                                          Sum(id=chunk.id, seq_no=chunk.seq_no, value=value))
            pending[chunk.id] = _FINISHED

    async def finalize_txn(self, shard: Shard, store: Store, publisher: Publisher) -> None:
        pending, self._pending[shard.id] = self._pending[shard.id], {}
        if isinstance(store, SQLiteStore):
            await store.run(lambda conn: _write_sqlite(conn, pending))
        elif isinstance(store, JSONFileStore):
            _write_json(store.state, pending)


async def _load(store: Store, stream: str) -> tuple[int, int]:
    """(last seq_no, running sum) of `stream` as committed; (0, 0) for a new stream."""
    if isinstance(store, JSONFileStore):
        seq_no, value = store.state.get(stream, (0, 0))
        return int(seq_no), int(value)
    assert isinstance(store, SQLiteStore)
    rows = await store.execute("SELECT seq_no, value FROM sums WHERE id = ?", (stream,))
    if not rows:
        return 0, 0
    seq_no, value = rows[0]
    return int(seq_no), int(value) % (1 << 64)


def _write_sqlite(conn: apsw.Connection, pending: dict[str, tuple[int, int]]) -> None:
    for stream, (seq_no, value) in pending.items():
        if (seq_no, value) == _FINISHED:
            conn.execute("DELETE FROM sums WHERE id = ?", (stream,))
        else:
            signed = value - (1 << 64) if value >= _SIGN else value  # SQLite is int64
            conn.execute("INSERT INTO sums VALUES (?, ?, ?) ON CONFLICT(id) DO UPDATE"
                         " SET seq_no = excluded.seq_no, value = excluded.value",
                         (stream, seq_no, signed))


def _write_json(state: dict[str, Any], pending: dict[str, tuple[int, int]]) -> None:
    for stream, entry in pending.items():
        if entry == _FINISHED:
            state.pop(stream, None)
        else:
            state[stream] = list(entry)
