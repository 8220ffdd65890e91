"""A range of a message journal, committed messages only, decoded and sequenced in bulk.

Blocks of records (json_blocks.py, csv_blocks.py) are decoded by Arrow and sequenced by
BulkSequencer; the rows it commits are taken from their blocks and yielded
as record batches of about BATCH_ROWS. A transaction opened before the
range and acknowledged within it is read again from where it opened
(`Replay`). Blocks held by open transactions stay in memory until those
commit or roll back; the others are dropped as soon as they are done.

A block Arrow cannot take whole is decoded record by record with the
journal's framing (`slow_block`), which fails naming the offending record's
offset, exactly as a read of the journal does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import numpy as np
import pyarrow as pa

from gazette_core.message.framing import CSV as CSV_TYPE
from gazette_core.message.framing import JSON_LINES, framing_for
from gazette_core.message.interfaces import CSVRecord, Envelope, JSONRecord
from gazette_core.message.reader import MessageDecodeError
from gazette_core.message.uuid import get_parts
from spark_jobs.decode.arrow_frames import batch_of_rows, output_schema
from spark_jobs.decode.bulk_sequence import BulkSequencer, Emitted, ProducerState, Replay
from spark_jobs.decode.content import JSON, JournalTask
from spark_jobs.decode.csv_blocks import csv_ends, decode_csv_block
from spark_jobs.decode.json_blocks import (
    Block,
    DecodedBlock,
    blocks,
    decode_block,
    leading_uuids,
    line_ends,
)
from spark_jobs.decode.parse_modes import PERMISSIVE
from spark_jobs.decode.rows import message_row
from spark_jobs.decode.uuid_columns import UUIDColumns

BATCH_ROWS = 65536


async def bulk_batches(task: JournalTask, begin: int, end: int,
                       producers: tuple[ProducerState, ...], schema: pa.Schema
                       ) -> AsyncIterator[pa.RecordBatch]:
    """The committed messages whose commit point is in [begin, end), in `schema`."""
    sequencer = BulkSequencer(begin, producers, max_held=task.ring_size)
    kept: dict[int, DecodedBlock] = {}
    out = Batcher(schema)
    number = 0
    async for block in blocks(task, begin, end, _ends(task)):
        kept[number] = decode(task, block, schema)
        for emitted in sequencer.block(number, kept[number].offsets, kept[number].ids):
            if isinstance(emitted, Replay):
                async for replayed in _replay(task, emitted, schema):
                    out.add(replayed)
            else:
                out.add(_take(kept[emitted[0]].batch, emitted[1]))
            if out.full():
                for batch in out.flush():
                    yield batch
        oldest = sequencer.oldest_held()
        for done in [k for k in kept if oldest is None or k < oldest]:
            del kept[done]
        number += 1
    for batch in out.flush():
        yield batch


async def bulk_states(task: JournalTask, begin: int, end: int,
                      producers: tuple[ProducerState, ...]) -> tuple[ProducerState, ...]:
    """The producers' states at `end`, from theirs at `begin` and the UUIDs between."""
    sequencer = BulkSequencer(begin, producers, hold=False)
    # Records that do not decode carry no UUID: the scan passes them, the read's mode says.
    ids_only = output_schema(task.kind, None, PERMISSIVE)
    number = 0
    async for block in blocks(task, begin, end, _ends(task)):
        found = leading_uuids(block, _ends(task)) if task.kind == JSON else None
        if found is None:
            decoded = decode(task, block, ids_only)
            found = decoded.offsets, decoded.ids
        sequencer.block(number, *found)
        number += 1
    return sequencer.states()


async def range_uuids(task: JournalTask, begin: int, end: int
                      ) -> list[tuple[np.ndarray, UUIDColumns]]:
    """Each block's record offsets and UUIDs in [begin, end): what `states_after` needs of
    the range, read apart from the producers' states at `begin` (so ahead of knowing them)."""
    ids_only = output_schema(task.kind, None)
    found: list[tuple[np.ndarray, UUIDColumns]] = []
    async for block in blocks(task, begin, end, _ends(task)):
        leading = leading_uuids(block, _ends(task)) if task.kind == JSON else None
        if leading is None:
            decoded = decode(task, block, ids_only)
            leading = decoded.offsets, decoded.ids
        found.append(leading)
    return found


def states_after(begin: int, producers: tuple[ProducerState, ...],
                 found: list[tuple[np.ndarray, UUIDColumns]]) -> tuple[ProducerState, ...]:
    """The producers' states after the blocks `found` (range_uuids), from theirs at `begin`."""
    sequencer = BulkSequencer(begin, producers, hold=False)
    for number, (offsets, ids) in enumerate(found):
        sequencer.block(number, offsets, ids)
    return sequencer.states()


def _ends(task: JournalTask) -> Callable[[bytes | bytearray], np.ndarray]:
    return line_ends if task.kind == JSON else csv_ends


def decode(task: JournalTask, block: Block, schema: pa.Schema) -> DecodedBlock:
    """The block decoded in bulk, or else record by record (which names a bad record)."""
    bulk = (decode_block if task.kind == JSON else decode_csv_block)(task.journal, block, schema)
    return bulk or slow_block(task, block, schema)


def slow_block(task: JournalTask, block: Block, schema: pa.Schema) -> DecodedBlock:
    framing = framing_for(JSON_LINES if task.kind == JSON else CSV_TYPE)
    bounds = block.bounds(_ends(task))
    rows, parts = [], []
    for start, stop in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        record, at = block.data[start:stop], block.base + start
        msg: JSONRecord | CSVRecord = JSONRecord() if task.kind == JSON else CSVRecord()
        try:
            framing.unmarshal(record, msg)
        except (ValueError, TypeError) as err:
            raise MessageDecodeError(
                f"{task.journal} offset {at}: cannot decode message: {err}") from err
        if isinstance(msg, JSONRecord):
            msg.text = record.decode().rstrip("\r\n")
        rows.append(message_row(Envelope(task.journal, at, at + len(record), msg)))
        clock, flags, producer = get_parts(msg.get_uuid())
        parts.append((clock, flags, int.from_bytes(producer, "big")))
    columns = np.array(parts, dtype=np.uint64).reshape(-1, 3)
    ids = UUIDColumns(clock=columns[:, 0], flags=columns[:, 1].astype(np.uint16),
                      producer=columns[:, 2])
    return DecodedBlock(offsets=block.base + bounds[:-1], ids=ids,
                        batch=batch_of_rows(task.kind, rows, schema))


async def _replay(task: JournalTask, replay: Replay, schema: pa.Schema
                  ) -> AsyncIterator[pa.RecordBatch]:
    """The committed messages of a transaction opened before the range, read again."""
    after = replay.after
    async for block in blocks(task, replay.begin, replay.end, _ends(task)):
        decoded = decode(task, block, schema)
        ids = decoded.ids
        candidates = np.flatnonzero((ids.producer == replay.producer) & (ids.flags == 1)
                                    & (ids.clock > after) & (ids.clock <= replay.through))
        rows = []
        for row, clock in zip(candidates.tolist(), ids.clock[candidates].tolist(), strict=True):
            if clock > after:  # Rising clocks only: a repeat is a duplicate.
                rows.append(row)
                after = clock
        if rows:
            yield _take(decoded.batch, np.array(rows))


def _take(batch: pa.RecordBatch, rows: np.ndarray) -> pa.RecordBatch:
    if len(rows) == batch.num_rows and (len(rows) == 0 or rows[-1] == len(rows) - 1):
        return batch
    return batch.take(pa.array(rows))


class Batcher:
    """Collects pieces of batches into batches of about BATCH_ROWS rows.

    A piece of a quarter of that or more (a whole block, the common case) goes on as it
    is: gathering pieces costs a copy of every byte, worth it for small pieces only.
    """

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self.pieces: list[pa.RecordBatch] = []
        self.rows = 0

    def add(self, piece: pa.RecordBatch) -> None:
        if piece.num_rows:
            self.pieces.append(piece)
            self.rows += piece.num_rows

    def full(self) -> bool:
        return self.rows >= BATCH_ROWS or bool(
            self.pieces and self.pieces[-1].num_rows >= BATCH_ROWS // 4)

    def flush(self) -> list[pa.RecordBatch]:
        """The pieces held: large ones as they are, runs of small ones gathered."""
        pieces, self.pieces, self.rows = self.pieces, [], 0
        out: list[pa.RecordBatch] = []
        small: list[pa.RecordBatch] = []
        for piece in [*pieces, None]:
            if piece is not None and piece.num_rows < BATCH_ROWS // 4:
                small.append(piece)
                continue
            if small:
                out.append(small[0] if len(small) == 1 else pa.Table.from_batches(
                    small, schema=self.schema).combine_chunks().to_batches()[0])
                small = []
            if piece is not None:
                out.append(piece)
        return out


__all__ = ["Emitted", "bulk_batches", "bulk_states"]
