"""The columns of the `gazette` data source, and Arrow record batches of them.

Without a schema, message journals give what executors always made
(columns.row_schema): journal, offset, uuid, producer, then `value`
(the JSON document's text) or `fields` (a CSV record's fields after its
UUID). A schema given names the columns exactly: `journal`, `offset`, `uuid` and
`producer` are the metadata (with their fixed types), `doc_journal` and the
like are the document's fields of those names, and every other column is the
document field of its name (JSON, decoded in bulk by Arrow's JSON reader) or
the next CSV field after the UUID (cast from its text). Raw journals give journal,
offset, data.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gazette_core.errors import ValidationError
from spark_jobs.decode.columns import SOURCE_META, row_schema, source_row_schema
from spark_jobs.decode.content import CSV, JSON
from spark_jobs.decode.parse_modes import (
    CORRUPT_DEFAULT,
    CORRUPT_KEY,
    MODE_KEY,
    PERMISSIVE,
    ParseMode,
)
from spark_jobs.decode.uuid_columns import publish_times

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

_ROW = re.compile(r"\brow (\d+)")


def spark_columns(kind: str, schema: StructType | None, corrupt: str = CORRUPT_DEFAULT
                  ) -> StructType:
    """The DataFrame's columns for journals of `kind`: the schema given, checked, or else
    the undecoded row (columns.source_row_schema)."""
    base = source_row_schema(kind)
    if schema is None:
        return base
    check_columns(schema, corrupt)
    if kind not in (JSON, CSV):
        if [f.name for f in schema.fields] != base.names:
            raise ValidationError("schema", "journals without a message framing have the "
                                  f"columns {', '.join(base.names)}; a schema cannot change them")
        return base
    meta = {f.name: f for f in base.fields if f.name in SOURCE_META}
    for f in schema.fields:
        if f.name in meta and f.dataType != meta[f.name].dataType:
            raise ValidationError(f"schema column {f.name}", "a metadata column; its type is "
                                  f"{meta[f.name].dataType.simpleString()}, not "
                                  f"{f.dataType.simpleString()}")
    return schema


def check_columns(schema: StructType, corrupt: str) -> None:
    """Refuse a schema naming a column twice, or whose corrupt-record column is no string."""
    from pyspark.sql.types import StringType

    seen: dict[str, str] = {}
    for f in schema.fields:
        # Spark compares column names without case (spark.sql.caseSensitive is false).
        if f.name.lower() in seen:
            other = seen[f.name.lower()]
            spelt = f" (also spelt {other})" if other != f.name else ""
            raise ValidationError(f"schema column {f.name}", f"named twice{spelt}; each "
                                  "column's name must be unique, whatever its case")
        seen[f.name.lower()] = f.name
        if f.name == corrupt and f.dataType != StringType():
            raise ValidationError(f"schema column {f.name}", "the column of malformed records "
                                  "(columnNameOfCorruptRecord) must be a string, not "
                                  f"{f.dataType.simpleString()}")


def document_name(column: str) -> str:
    """The document field a column holds: `doc_journal` holds the document's `journal`."""
    return column[4:] if column.startswith("doc_") and column[4:] in SOURCE_META else column


def output_schema(kind: str, schema: StructType | None, mode: str = "",
                  corrupt: str = CORRUPT_DEFAULT) -> pa.Schema:
    """The Arrow schema of the record batches a task yields; `mode` (parse_modes.py), when
    given, rides in its metadata to the decoders."""
    from pyspark.sql.pandas.types import to_arrow_schema

    out = to_arrow_schema(spark_columns(kind, schema, corrupt), timezone="UTC")
    if not mode:
        return out
    return out.with_metadata({MODE_KEY: mode.encode(), CORRUPT_KEY: corrupt.encode()})


def task_schema_json(schema: StructType, mode: str = PERMISSIVE,
                     corrupt: str = CORRUPT_DEFAULT) -> str:
    """A task's schema as JSON (StructType.json) with the read's parse mode beside it;
    a schema check_columns refuses is refused here, as the reader is made."""
    import json

    check_columns(schema, corrupt)
    return json.dumps({**schema.jsonValue(), "mode": mode, "columnNameOfCorruptRecord": corrupt})


def task_schema(kind: str, schema_json: str) -> pa.Schema:
    """The Arrow schema of a task's batches, from task_schema_json's text ("": the executor
    row, without `timestamp`; plain StructType JSON: FAILFAST, as before modes)."""
    import json

    from pyspark.sql.types import StructType

    if not schema_json:  # The executor row of read_journals (columns.row_schema).
        from pyspark.sql.pandas.types import to_arrow_schema

        return to_arrow_schema(row_schema(kind), timezone="UTC")
    parsed = json.loads(schema_json)
    return output_schema(kind, StructType.fromJson(parsed), parsed.get("mode", ""),
                         parsed.get("columnNameOfCorruptRecord", CORRUPT_DEFAULT))


def batch_of_rows(kind: str, rows: Sequence[tuple[Any, ...]], schema: pa.Schema
                  ) -> pa.RecordBatch:
    """A record batch of `schema` from executor rows (rows.message_row / raw_rows)."""
    import pyarrow as pa

    base = row_schema(kind).names
    if kind not in (JSON, CSV):
        return pa.RecordBatch.from_pylist(
            [dict(zip(base, row, strict=True)) for row in rows], schema=schema)
    corrupt = ParseMode.of(schema).corrupt  # null: a block Arrow refused fails whole here
    docs = pa.schema([f for f in schema if f.name not in (*SOURCE_META, *base, corrupt)])
    decoded = dict(zip(docs.names, json_columns(rows, docs) if kind == JSON
                       else csv_columns(rows, docs), strict=True))
    columns = [decoded[f.name] if f.name in decoded
               else _times(rows) if f.name == "timestamp"
               else pa.nulls(len(rows), f.type) if f.name == corrupt
               else pa.array([row[base.index(f.name)] for row in rows], type=f.type)
               for f in schema]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _times(rows: Sequence[tuple[Any, ...]]) -> pa.Array:
    """The publish time of each row, from its UUID (row[2]; None: no UUID)."""
    import numpy as np

    from gazette_core.message.uuid import parse_text

    return publish_times(np.array([parse_text(row[2])[0] if row[2] else 0 for row in rows],
                                  dtype=np.uint64))


def json_columns(rows: Sequence[tuple[Any, ...]], docs: pa.Schema) -> list[pa.Array]:
    """The typed document columns of JSON rows (the last element of each is its text)."""
    import pyarrow as pa
    from pyarrow import json as pajson

    if not rows:
        return [pa.array([], type=f.type) for f in docs]
    names = {f.name: f.with_name(document_name(f.name)) for f in docs}
    text = "\n".join(row[-1] for row in rows).encode()
    try:
        table = pajson.read_json(
            io.BytesIO(text),
            read_options=pajson.ReadOptions(block_size=max(1 << 20, len(text) + 1)),
            parse_options=pajson.ParseOptions(
                explicit_schema=pa.schema(list(names.values())),
                unexpected_field_behavior="ignore"))
    except pa.ArrowInvalid as exc:
        raise _decode_error(rows, exc) from None
    return [table.column(names[f.name].name).combine_chunks() for f in docs]


def csv_columns(rows: Sequence[tuple[Any, ...]], docs: pa.Schema) -> list[pa.Array]:
    """CSV fields by position, cast to the schema's types ("" is null but for strings)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out = []
    for i, f in enumerate(docs):
        texts = [fields[i] if i < len(fields) else None for *_, fields in rows]
        column = pa.array(texts, type=pa.string())
        if not pa.types.is_string(f.type):
            column = pc.if_else(pc.equal(column, ""), pa.scalar(None, pa.string()), column)
            try:
                column = column.cast(f.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise _cast_error(rows, texts, i, f, exc) from None
        out.append(column)
    return out


def _cast_error(rows: Sequence[tuple[Any, ...]], texts: list[str | None], i: int,
                f: pa.Field, exc: Exception) -> ValidationError:
    """Name the journal and offset of the first CSV field that does not cast to `f`'s type."""
    import pyarrow as pa

    for row, text in zip(rows, texts, strict=True):
        try:
            pa.array([text or None], type=pa.string()).cast(f.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return ValidationError("schema", f"{row[0]} offset {row[1]}: CSV field {i + 1} "
                                   f"({text!r}) does not fit column {f.name} of type {f.type}")
    return ValidationError(f"column {f.name}", f"CSV field {i + 1} does not fit {f.type}: {exc}")


def _decode_error(rows: Sequence[tuple[Any, ...]], exc: Exception) -> ValidationError:
    """Name the journal and offset of the document Arrow could not decode."""
    found = _ROW.search(str(exc))
    detail = str(exc).strip().splitlines()[0]
    if found is not None and int(found.group(1)) < len(rows):
        journal, offset = rows[int(found.group(1))][:2]
        return ValidationError("schema", f"{journal} offset {offset}: the document does not "
                               f"fit the schema: {detail}")
    return ValidationError("schema", f"a document does not fit the schema: {detail}")
