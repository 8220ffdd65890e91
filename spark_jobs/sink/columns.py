"""JSON records of a whole Arrow batch at once, column by column (the sink's fast path).

Encoding each row with `json.dumps` costs microseconds of Python per row; for
rows whose columns are all flat (integers, floats, booleans, strings) the
records are built here with Arrow's compute functions instead: each column
becomes its JSON text, and the texts are joined into `{"uuid":"..","a":1}`
lines. Anything else (a nested or temporal column, a string holding control
characters other than newline, tab and carriage return, a NaN or an
infinity) gives None, and the caller encodes the batch row by row
(encode.py), which also words any refusal.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_ESCAPES = (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"))
_CONTROL = r"[\x00-\x08\x0b\x0c\x0e-\x1f]"


def json_records(batch: pa.RecordBatch, columns: tuple[str, ...],
                 uuids: pa.Array | list[str]) -> pa.Array | None:
    """Each row's whole JSON record (UUID first, then `columns`, then a newline) as a binary
    array, or None if a column is not one this encodes."""
    parts: list[pa.Array | str] = ['{"uuid":"', pa.array(uuids, type=pa.string()), '"']
    for name in columns:
        index = batch.schema.get_field_index(name)
        text = _text(batch.column(index)) if index >= 0 else None
        if text is None:
            return None
        parts += [f",{json.dumps(name)}:", text]
    parts.append("}\n")
    joined: pa.Array = pc.binary_join_element_wise(*parts, "")
    return joined.view(pa.binary())


def uuid_array(text: bytes) -> pa.Array:
    """A string array of UUIDs from their texts end to end, 36 bytes each (no copy)."""
    n = len(text) // 36
    offsets = np.arange(0, 36 * n + 1, 36, dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets),
                                                 pa.py_buffer(text)])


def record_bytes(records: pa.Array) -> tuple[memoryview, np.ndarray]:
    """The records of a binary array end to end, and the offset of each in them (plus the
    end): what an append carries, and where it may be cut."""
    offsets = np.frombuffer(records.buffers()[1], dtype=np.int32)[
        records.offset:records.offset + len(records) + 1].astype(np.int64)
    data = records.buffers()[2]
    start, end = int(offsets[0]), int(offsets[-1])
    raw = memoryview(b"") if data is None else memoryview(data)[start:end]
    return raw, offsets - start


def _text(column: pa.Array) -> pa.Array | None:
    """The JSON text of each value (`null` for nulls), or None if not encodable here."""
    kind = column.type
    if pa.types.is_integer(kind):
        text = column.cast(pa.string())
    elif pa.types.is_floating(kind):
        finite = pc.is_finite(column)
        if not pc.all(pc.or_kleene(finite, pc.is_null(column))).as_py():
            return None
        text = column.cast(pa.string())
    elif pa.types.is_boolean(kind):
        text = pc.if_else(column, "true", "false")
    elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
        column = column.cast(pa.string())
        # Most text needs no escape: one pass over its bytes spares the regex and replacements.
        if _needs_escape(column):
            if pc.any(pc.match_substring_regex(column, _CONTROL)).as_py():
                return None
            for old, new in _ESCAPES:
                column = pc.replace_substring(column, old, new)
        text = pc.binary_join_element_wise('"', column, '"', "")
    else:
        return None
    return pc.fill_null(text, "null")


def _needs_escape(column: pa.Array) -> bool:
    """Whether any byte of the strings is a quote, a backslash or a control character."""
    data = column.buffers()[2]
    if data is None:
        return False
    raw = np.frombuffer(data, dtype=np.uint8)
    return bool(np.any((raw < 0x20) | (raw == 0x22) | (raw == 0x5C)))
