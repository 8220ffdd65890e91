"""CSV content (RFC 4180 rows, the UUID first) decoded by Arrow's CSV reader a block at a time.

The counterpart of json_blocks.py for `text/csv` journals. A record ends at a
newline outside double quotes: with every quote toggling, as the framing's
own splitter reads them, that is a newline preceded by an even number of
quotes. Without a schema the fields after the UUID are the `fields` column;
with one, the document columns are those fields in order, cast from their
text ("" is null but for strings) and null past the end of a short row.
A field that does not cast follows the read's mode (parse_modes.py): null
(PERMISSIVE, the row's text in the corrupt-record column), the row left out
(DROPMALFORMED), or FAILFAST: the block goes row by row, naming the field.
Rows of several widths are split here, one at a time; a block with a blank
line or a row without a UUID gives None: the caller decodes it row by row,
which names the record at fault.
"""

from __future__ import annotations

import csv
import io

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import csv as pacsv

from spark_jobs.decode.columns import SOURCE_META
from spark_jobs.decode.json_blocks import Block, DecodedBlock, repeated, uuid_column
from spark_jobs.decode.parse_modes import DROPMALFORMED, FAILFAST, ParseMode
from spark_jobs.decode.uuid_columns import UUIDColumns, parse_uuids, publish_times


def csv_ends(data: bytes | bytearray) -> np.ndarray:
    """Where CSV records end: after each newline with an even count of quotes before it."""
    raw = np.frombuffer(data, dtype=np.uint8)
    quotes = np.flatnonzero(raw == 34)
    newlines = np.flatnonzero(raw == 10)
    return newlines[np.searchsorted(quotes, newlines) % 2 == 0] + 1


def decode_csv_block(journal: str, block: Block, schema: pa.Schema) -> DecodedBlock | None:
    """Every row of `block` in `schema`'s columns, or None if Arrow cannot take it whole."""
    bounds = block.bounds(csv_ends)
    n = len(bounds) - 1
    parse = ParseMode.of(schema)
    docs = [f for f in schema if f.name not in SOURCE_META and f.name != parse.corrupt]
    table = _read(block.data, bounds)
    if table is not None and table.num_rows == n:
        read = [table.column(i).combine_chunks() for i in range(table.num_columns)]
    elif [f.name for f in docs] != ["fields"]:
        split = _split(block.data, bounds)  # rows of several widths
        if split is None:
            return None
        read = split
    else:
        return None
    raw_uuid = read[0]
    ids = parse_uuids(raw_uuid)
    if ids is None or pc.any(pc.equal(raw_uuid, "")).as_py():
        return None  # The framing refuses a row without a UUID: let it say so.
    uuid = uuid_column(raw_uuid)
    after = read[1:]
    columns = {"journal": repeated(journal, n),
               "offset": pa.array(block.base + bounds[:-1], type=pa.int64()),
               "uuid": uuid, "producer": pc.utf8_slice_codeunits(uuid, 24, 36)}
    if "timestamp" in schema.names:
        columns["timestamp"] = publish_times(ids.clock)
    bad = np.zeros(n, dtype=bool)
    if [f.name for f in docs] == ["fields"]:
        columns["fields"] = _lists(after, n).cast(schema.field("fields").type)
    else:
        for i, f in enumerate(docs):
            text = after[i] if i < len(after) else pa.nulls(n, pa.string())
            typed = _typed_each(text, f.type, parse.mode)
            if typed is None:
                return None  # FAILFAST: record by record, which names the field at fault.
            columns[f.name], misfits = typed
            bad |= misfits
    if parse.corrupt:
        columns[parse.corrupt] = pc.if_else(pa.array(bad), _lines(block.data, bounds),
                                            pa.scalar(None, pa.string()))
    offsets = block.base + bounds[:-1]
    if parse.mode == DROPMALFORMED and bad.any():
        keep = ~bad
        ids = UUIDColumns(clock=ids.clock[keep], flags=ids.flags[keep],
                          producer=ids.producer[keep])
        offsets = offsets[keep]
        columns = {name: column.filter(pa.array(keep)) for name, column in columns.items()}
    batch = pa.RecordBatch.from_arrays([columns[f.name] for f in schema], schema=schema)
    return DecodedBlock(offsets=offsets, ids=ids, batch=batch)


def _read(data: bytes, bounds: np.ndarray) -> pa.Table | None:
    """The block's rows, every field a string, if they all have the first row's width."""
    first = data[int(bounds[0]):int(bounds[1])].decode(errors="replace")
    width = len(next(csv.reader(io.StringIO(first, newline="")), []))
    if width == 0:
        return None
    names = [f"c{i}" for i in range(width)]
    try:
        return pacsv.read_csv(
            io.BytesIO(data),
            read_options=pacsv.ReadOptions(column_names=names, block_size=len(data) + 1,
                                           use_threads=False),
            parse_options=pacsv.ParseOptions(newlines_in_values=True, ignore_empty_lines=False),
            convert_options=pacsv.ConvertOptions(
                column_types=dict.fromkeys(names, pa.string()), strings_can_be_null=False,
                quoted_strings_can_be_null=False))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _split(data: bytes, bounds: np.ndarray) -> list[pa.Array] | None:
    """The block's fields by position, rows of any width (null past a short row's end), as
    the framing splits them; None if a row is blank or not UTF-8."""
    rows = []
    for start, stop in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        try:
            text = data[start:stop].decode()
        except UnicodeDecodeError:
            return None
        row = next(csv.reader(io.StringIO(text, newline="")), [])
        if not row:
            return None
        rows.append(row)
    width = max(len(row) for row in rows)
    return [pa.array([row[i] if i < len(row) else None for row in rows], type=pa.string())
            for i in range(width)]


def _lists(after: list[pa.Array], n: int) -> pa.Array:
    """Row by row, the fields after the UUID as a list."""
    width = len(after)
    if width == 0:
        return pa.ListArray.from_arrays(pa.array(np.zeros(n + 1, dtype=np.int32)),
                                        pa.array([], type=pa.string()))
    flat = pa.concat_arrays(after)
    order = (np.arange(n)[:, None] + np.arange(width)[None, :] * n).reshape(-1)
    offsets = pa.array(np.arange(n + 1, dtype=np.int32) * width)
    return pa.ListArray.from_arrays(offsets, flat.take(pa.array(order)))


def _typed_each(text: pa.Array, kind: pa.DataType, mode: str
                ) -> tuple[pa.Array, np.ndarray] | None:
    """The column of `kind` and where its values did not cast (null there); None if one
    did not and `mode` is FAILFAST."""
    try:
        return _typed(text, kind), np.zeros(len(text), dtype=bool)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        if mode == FAILFAST:
            return None
    values, misfits = [], np.zeros(len(text), dtype=bool)
    for i, value in enumerate(text.to_pylist()):
        try:
            values.append(_typed(pa.array([value], type=pa.string()), kind)[0].as_py())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            values.append(None)
            misfits[i] = True
    return pa.array(values, type=kind), misfits


def _lines(data: bytes, bounds: np.ndarray) -> pa.Array:
    """Each record's text without its line ending."""
    lines = pa.StringArray.from_buffers(len(bounds) - 1, pa.py_buffer(bounds.astype(np.int32)),
                                        pa.py_buffer(data))
    return pc.utf8_rtrim(lines, characters="\r\n")


def _typed(text: pa.Array, kind: pa.DataType) -> pa.Array:
    if pa.types.is_string(kind):
        return text
    empty = pc.equal(text, "")
    return pc.if_else(empty, pa.scalar(None, pa.string()), text).cast(kind)
