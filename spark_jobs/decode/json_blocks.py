"""JSON-lines content in blocks of whole records, decoded by Arrow in one call per block.

`blocks` cuts a range's content (content.content) into blocks of about
BLOCK_BYTES ending at a newline. `decode_block` reads a block with Arrow's
JSON reader, the message UUIDs with uuid_columns, and builds the output
columns (arrow_frames) for every record of the block; which of them are
committed is bulk_sequence's to say. A block Arrow cannot take whole (a blank
line, a document that does not fit the schema, a UUID spelt another way, a
MAP column) is decoded record by record (parse_modes.py), with Spark's
coercions and the read's parse mode, naming the offending record.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import json as pajson

from gazette_core.message.reader import MessageDecodeError
from spark_jobs.decode.arrow_frames import document_name
from spark_jobs.decode.columns import SOURCE_META
from spark_jobs.decode.content import JournalTask, content
from spark_jobs.decode.parse_modes import PERMISSIVE, ParseMode, decode_records
from spark_jobs.decode.uuid_columns import (
    UUIDColumns,
    parse_uuid_texts,
    parse_uuids,
    publish_times,
)

BLOCK_BYTES = 4 << 20
NIL = "00000000-0000-0000-0000-000000000000"
_LEADING = b'{"uuid":"'
_PREFIX = np.frombuffer(_LEADING, dtype=np.uint8)
_PREFIX_AT = np.arange(len(_LEADING))
_UUID_AT = np.arange(36)


def line_ends(data: bytes | bytearray) -> np.ndarray:
    """Where JSON records end: after each newline."""
    return np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10) + 1


@dataclass(frozen=True, eq=False)
class Block:
    """Whole records of one journal: `data` starts at journal offset `base`. `ends`, where
    the records end within `data`, is kept from cutting the block (None: not known yet)."""

    base: int
    data: bytes
    ends: np.ndarray | None = None

    def bounds(self, ends: Callable[[bytes | bytearray], np.ndarray] = line_ends
               ) -> np.ndarray:
        """Where the records start within `data`, and its length."""
        found = self.ends if self.ends is not None else ends(self.data)
        return np.concatenate(([0], found)).astype(np.int64)


@dataclass(frozen=True)
class DecodedBlock:
    offsets: np.ndarray  # int64: each record's first byte in the journal
    ids: UUIDColumns
    batch: pa.RecordBatch  # every record, in the output schema


async def blocks(task: JournalTask, begin: int, end: int | None,
                 ends: Callable[[bytes | bytearray], np.ndarray] = line_ends,
                 block_bytes: int = BLOCK_BYTES) -> AsyncIterator[Block]:
    """The records of [begin, end) in blocks; a gap (pruned content) starts a new block.

    `ends(data)` gives the offsets within `data` just past each record it completes.
    """
    pending, base = bytearray(), -1
    async for offset, chunk in content(task, begin, end):
        if offset != base + len(pending):
            if pending:
                found = ends(pending)
                if len(found):
                    yield Block(base, _head(pending, int(found[-1])), found)
            # A partial record before the gap is lost.
            pending, base = bytearray(), offset
        pending += chunk
        if len(pending) >= block_bytes:
            found = ends(pending)
            if len(found):
                cut = int(found[-1])
                yield Block(base, _head(pending, cut), found)
                del pending[:cut]
                base += cut
    found = ends(pending)
    cut = int(found[-1]) if len(found) else 0
    if cut:
        yield Block(base, _head(pending, cut), found)
    if len(pending) > cut:
        raise MessageDecodeError(f"{task.journal} offset {base + cut}: content ends inside a "
                                 f"{len(pending) - cut}-byte partial record")


def _head(pending: bytearray, cut: int) -> bytes:
    """The first `cut` bytes of `pending`, copied once (a slice of a bytearray copies too)."""
    with memoryview(pending) as view:
        return bytes(view[:cut])


def leading_uuids(block: Block, ends: Callable[[bytes | bytearray], np.ndarray] = line_ends
                  ) -> tuple[np.ndarray, UUIDColumns] | None:
    """The records' offsets and UUIDs when every record starts `{"uuid":"<36 chars>"` (as
    publishers write them; `{"uuid": "` too, as Python's json.dumps spaces it), read at those
    places without parsing the documents; else None.

    For scans of producer states, and for reads that select no document field: the
    documents are not checked.
    """
    found = _leading_texts(block, block.bounds(ends))
    if found is None:
        return None
    starts, texts = found
    ids = parse_uuid_texts(texts)
    return None if ids is None else (block.base + starts, ids)


def _leading_texts(block: Block, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Each record's start and its leading UUID's (rows, 36) text, if every record leads
    with one (leading_uuids)."""
    starts = bounds[:-1]
    if not len(starts) or np.any(bounds[1:] - starts < len(_LEADING) + 39):
        return None
    raw = np.frombuffer(block.data, dtype=np.uint8)
    if np.any(raw[starts[:, None] + _PREFIX_AT[:-1]] != _PREFIX[:-1]):
        return None
    # The opening quote of the value, right after the colon or after one space.
    at = starts + len(_LEADING) - 1 + (raw[starts + len(_LEADING) - 1] == ord(" "))
    if np.any(raw[at] != ord('"')) or np.any(raw[at + 37] != ord('"')):
        return None
    return starts, raw[at[:, None] + 1 + _UUID_AT]


def decode_block(journal: str, block: Block, schema: pa.Schema) -> DecodedBlock:
    """Every record of `block` in `schema`'s columns: in bulk with Arrow, or else record by
    record with Spark's coercions and the read's parse mode (parse_modes.py)."""
    bounds = block.bounds()
    fields = {f.name: document_name(f.name) for f in schema
              if f.name not in (*SOURCE_META, "value", "fields", ParseMode.of(schema).corrupt)}
    fast = _bulk(journal, block, bounds, schema, fields)
    if fast is not None:
        return fast
    offsets, ids, batch = decode_records(journal, block.base, block.data, bounds, schema,
                                         fields)
    return DecodedBlock(offsets=offsets, ids=ids, batch=batch)


def _bulk(journal: str, block: Block, bounds: np.ndarray, schema: pa.Schema,
          fields: dict[str, str]) -> DecodedBlock | None:
    """The block decoded by Arrow's JSON reader, or None if it cannot take it whole."""
    if not fields:
        unparsed = _unparsed(journal, block, bounds, schema)
        if unparsed is not None:
            return unparsed
    n = len(bounds) - 1
    read = [pa.field("uuid", pa.string())]
    for name, field in fields.items():
        kind = readable(schema.field(name).type)
        if kind is None:
            return None
        read.append(pa.field(field, kind))
    try:
        table = pajson.read_json(
            pa.BufferReader(block.data),
            read_options=pajson.ReadOptions(block_size=len(block.data) + 1, use_threads=False),
            parse_options=pajson.ParseOptions(explicit_schema=pa.schema(read),
                                              unexpected_field_behavior="ignore"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if table.num_rows != n:
        return None
    raw_uuid = table.column("uuid").combine_chunks()
    texts = _fixed_texts(raw_uuid)
    ids = parse_uuids(raw_uuid) if texts is None else parse_uuid_texts(texts)
    if ids is None:
        return None
    columns = _metadata(journal, block, bounds, schema, raw_uuid, ids, texts)
    for name, field in fields.items():
        column = from_text(table.column(field).combine_chunks(), schema.field(name).type)
        if column is None:
            return None
        columns[name] = column
    return _decoded(block, bounds, schema, columns, ids)


def _unparsed(journal: str, block: Block, bounds: np.ndarray,
              schema: pa.Schema) -> DecodedBlock | None:
    """A block of a read that selects no document field, its UUIDs read where every record
    leads with one, without parsing the documents; None if they do not, or if the read's
    mode must know which records are malformed (only PERMISSIVE without a corrupt-record
    column need not: its rows of such records would differ in their nulls alone)."""
    mode = ParseMode.of(schema)
    if mode.mode != PERMISSIVE or mode.corrupt:
        return None
    found = _leading_texts(block, bounds)
    if found is None:
        return None
    texts = found[1]
    ids = parse_uuid_texts(texts)
    if ids is None:
        return None
    n = len(texts)
    raw_uuid = pa.StringArray.from_buffers(
        n, pa.py_buffer(np.arange(n + 1, dtype=np.int32) * 36),
        pa.py_buffer(np.ascontiguousarray(texts)))
    return _decoded(block, bounds, schema,
                    _metadata(journal, block, bounds, schema, raw_uuid, ids, texts), ids)


def _metadata(journal: str, block: Block, bounds: np.ndarray, schema: pa.Schema,
              raw_uuid: pa.Array, ids: UUIDColumns,
              texts: np.ndarray | None) -> dict[str, pa.Array]:
    """The metadata and value columns `schema` selects (only those: a schema of document
    fields makes none of them, nor the documents' text)."""
    n = len(bounds) - 1
    names = set(schema.names)
    columns: dict[str, pa.Array] = {}
    if names & {"uuid", "producer"}:
        columns["uuid"], columns["producer"] = uuid_columns(raw_uuid, ids, texts)
    if "journal" in names:
        columns["journal"] = repeated(journal, n)
    if "offset" in names:
        columns["offset"] = pa.array(block.base + bounds[:-1], type=pa.int64())
    if "value" in names:
        columns["value"] = _lines(block.data, bounds)
    if "timestamp" in names:
        columns["timestamp"] = publish_times(ids.clock)
    return columns


def _decoded(block: Block, bounds: np.ndarray, schema: pa.Schema,
             columns: dict[str, pa.Array], ids: UUIDColumns) -> DecodedBlock:
    n = len(bounds) - 1
    batch = pa.RecordBatch.from_arrays(
        [columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in schema],
        schema=schema)
    return DecodedBlock(offsets=block.base + bounds[:-1], ids=ids, batch=batch)


def readable(kind: pa.DataType) -> pa.DataType | None:
    """The type Arrow's JSON reader reads a column of `kind` as: DATE and BINARY as their
    text (from_text converts it), None for a type it cannot read (a MAP, or a DATE or
    BINARY within a nested type)."""
    if pa.types.is_date32(kind) or pa.types.is_binary(kind):
        return pa.string()
    return kind if _native(kind) else None


def _native(kind: pa.DataType) -> bool:
    if pa.types.is_map(kind) or pa.types.is_date32(kind) or pa.types.is_binary(kind):
        return False
    if pa.types.is_list(kind):
        return _native(kind.value_type)
    if pa.types.is_struct(kind):
        return all(_native(f.type) for f in kind)
    return True


def from_text(column: pa.Array, kind: pa.DataType) -> pa.Array | None:
    """A column read by Arrow as `readable(kind)`, as `kind`; None if a value does not fit."""
    if column.type == kind:
        return column
    try:
        if pa.types.is_date32(kind):
            valid = pc.match_substring_regex(column, r"^\d{4}-\d{2}-\d{2}$")
            if not pc.all(pc.or_kleene(valid, pc.is_null(column))).as_py():
                return None
            return column.cast(kind)
        return pa.array([None if v is None else base64.b64decode(v, validate=True)
                         for v in column.to_pylist()], type=kind)
    except (pa.ArrowInvalid, ValueError, binascii.Error):
        return None


def uuid_columns(raw: pa.Array, ids: UUIDColumns,
                 texts: np.ndarray | None) -> tuple[pa.Array, pa.Array]:
    """The uuid and producer columns of UUID texts whose parts are `ids`; `texts` are
    their (rows, 36) bytes, as _fixed_texts found them (None: not all 36 long).

    When every text is a UUID in lower case (no "", no nil UUID: the common case), the
    texts are the column as they are, and the producers are cut from them in one copy.
    """
    n = len(raw)
    if texts is None or not np.all(ids.clock | ids.producer | ids.flags) or np.any(
            (texts >= ord("A")) & (texts <= ord("F"))):
        uuid = uuid_column(raw)
        return uuid, pc.utf8_slice_codeunits(uuid, 24, 36)
    producers = np.ascontiguousarray(texts[:, 24:36])
    return raw, pa.StringArray.from_buffers(
        n, pa.py_buffer(np.arange(n + 1, dtype=np.int32) * 12), pa.py_buffer(producers))


def _fixed_texts(raw: pa.Array) -> np.ndarray | None:
    """The (rows, 36) bytes of a string column of 36-character values without nulls, or
    None if it is not one."""
    n = len(raw)
    if raw.null_count or raw.type != pa.string() or not n:
        return None
    offsets = np.frombuffer(raw.buffers()[1], dtype=np.int32)[raw.offset:raw.offset + n + 1]
    if offsets[-1] - offsets[0] != 36 * n or np.any(np.diff(offsets) != 36):
        return None
    data = np.frombuffer(raw.buffers()[2], dtype=np.uint8)
    return data[offsets[0]:offsets[-1]].reshape(n, 36)


def uuid_column(raw: pa.Array) -> pa.Array:
    """The UUID column of UUID texts: lower case, null for none ("" or the nil UUID)."""
    lowered = pc.utf8_lower(raw)
    none = pc.or_(pc.equal(lowered, ""), pc.equal(lowered, NIL))
    return pc.if_else(none, pa.scalar(None, pa.string()), lowered)


def repeated(text: str, n: int) -> pa.Array:
    raw = text.encode()
    offsets = np.arange(n + 1, dtype=np.int32) * len(raw)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(raw * n))


def _lines(data: bytes, bounds: np.ndarray) -> pa.Array:
    """Each record's text without its line ending."""
    lines = pa.StringArray.from_buffers(len(bounds) - 1, pa.py_buffer(bounds.astype(np.int32)),
                                        pa.py_buffer(data))
    return pc.utf8_rtrim(lines, characters="\r\n")
