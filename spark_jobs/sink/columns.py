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

import itertools
import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_ESCAPES = (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"))
_CONTROL = r"[\x00-\x08\x0b\x0c\x0e-\x1f]"


def json_records(batch: pa.RecordBatch, columns: tuple[str, ...], uuids: list[str]
                 ) -> list[bytes] | None:
    """Each row's whole JSON record (UUID first, then `columns`), or None if a column is not
    one this encodes."""
    parts: list[pa.Array | str] = ['{"uuid":"', pa.array(uuids, type=pa.string()), '"']
    for name in columns:
        index = batch.schema.get_field_index(name)
        text = _text(batch.column(index)) if index >= 0 else None
        if text is None:
            return None
        parts += [f",{json.dumps(name)}:", text]
    parts.append("}\n")
    joined = pc.binary_join_element_wise(*parts, "")
    offsets = np.frombuffer(joined.buffers()[1], dtype=np.int32)[
        joined.offset:joined.offset + len(joined) + 1].tolist()
    data = joined.buffers()[2]
    raw = b"" if data is None else data.to_pybytes()
    return [raw[a:b] for a, b in itertools.pairwise(offsets)]


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
        if pc.any(pc.match_substring_regex(column, _CONTROL)).as_py():
            return None
        for old, new in _ESCAPES:
            column = pc.replace_substring(column, old, new)
        text = pc.binary_join_element_wise('"', column, '"', "")
    else:
        return None
    return pc.fill_null(text, "null")
