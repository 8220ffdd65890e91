"""JSON records one at a time, under Spark's parse modes: what a block Arrow refused becomes.

A record is malformed when it is not a JSON object (or its `uuid` is not a
UUID), or when a value does not fit its column (spark_values.py). The
read's `mode` (docs/dataframes.md, "Schemas and parse modes") says what
then: PERMISSIVE keeps the row with the values that do not fit as null (a
record that is not an object: every document column null, no UUID) and
its text in the corrupt-record column if the schema has one;
DROPMALFORMED leaves the record out (a record without a UUID takes no part
in any transaction, and one whose UUID was read is left out of the
sequencing as if never written); FAILFAST fails the read in one line
naming the journal, the offset and the value. Batches carry the mode in
their schema's metadata (arrow_frames.output_schema); a schema without it
is FAILFAST.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from gazette_core.errors import ValidationError
from gazette_core.message.framing import JSON_LINES, framing_for
from gazette_core.message.interfaces import ZERO_UUID, JSONRecord
from gazette_core.message.reader import MessageDecodeError
from gazette_core.message.uuid import get_parts
from spark_jobs.decode.spark_values import Misfit, convert, loads
from spark_jobs.decode.uuid_columns import UUIDColumns, publish_times

PERMISSIVE, DROPMALFORMED, FAILFAST = "PERMISSIVE", "DROPMALFORMED", "FAILFAST"
MODES = (PERMISSIVE, DROPMALFORMED, FAILFAST)
MODE_KEY, CORRUPT_KEY = b"gazette.mode", b"gazette.corruptColumn"
CORRUPT_DEFAULT = "_corrupt_record"  # as Spark's spark.sql.columnNameOfCorruptRecord
METADATA = ("journal", "offset", "uuid", "producer", "timestamp")


@dataclass(frozen=True)
class ParseMode:
    """A read's mode and the column of its malformed records' text ("": none)."""

    mode: str = FAILFAST
    corrupt: str = ""

    @classmethod
    def of(cls, schema: pa.Schema) -> ParseMode:
        meta = schema.metadata or {}
        corrupt = meta.get(CORRUPT_KEY, b"").decode()
        return cls(mode=meta.get(MODE_KEY, FAILFAST.encode()).decode(),
                   corrupt=corrupt if corrupt in schema.names else "")


@dataclass
class _Record:
    offset: int
    text: str
    uuid: str | None = None
    parts: tuple[int, int, int] = (0, 0, 0)
    doc: dict[str, Any] | None = None
    values: dict[str, Any] | None = None
    malformed: bool = False


def decode_records(journal: str, base: int, data: bytes, bounds: np.ndarray,
                   schema: pa.Schema, fields: dict[str, str]) -> tuple[
                       np.ndarray, UUIDColumns, pa.RecordBatch]:
    """Offsets, UUIDs and the batch of `schema` of the records of `data` (at journal offset
    `base`, records starting at `bounds`); `fields` maps document columns to their fields."""
    parse = ParseMode.of(schema)
    records = []
    for start, stop in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        if parse.mode != FAILFAST and not data[start:stop].strip():
            continue  # A blank line is no record (as Spark's reader skips it).
        record = _record(journal, base + start, data[start:stop], schema, fields, parse)
        if not (record.malformed and parse.mode == DROPMALFORMED):
            records.append(record)
    offsets = np.array([r.offset for r in records], dtype=np.int64)
    parts = np.array([r.parts for r in records], dtype=np.uint64).reshape(-1, 3)
    ids = UUIDColumns(clock=parts[:, 0], flags=parts[:, 1].astype(np.uint16),
                      producer=parts[:, 2])
    return offsets, ids, _batch(journal, records, ids, schema, parse)


def _record(journal: str, at: int, raw: bytes, schema: pa.Schema, fields: dict[str, str],
            parse: ParseMode) -> _Record:
    record = _Record(offset=at, text=raw.decode(errors="replace").rstrip("\r\n"))
    msg = JSONRecord()
    try:
        framing_for(JSON_LINES).unmarshal(raw, msg)
        record.doc = loads(raw)
    except (ValueError, TypeError) as err:
        if parse.mode == FAILFAST:
            raise MessageDecodeError(f"{journal} offset {at}: cannot decode message: "
                                     f"{err}") from err
        record.malformed = True
        return record
    u = msg.get_uuid()
    if u != ZERO_UUID:
        clock, flags, producer = get_parts(u)
        record.uuid, record.parts = str(u), (clock, flags, int.from_bytes(producer, "big"))
    record.values = {}
    for name, field in fields.items():
        try:
            record.values[name] = convert(record.doc.get(field), schema.field(name).type)
        except Misfit as misfit:
            if parse.mode == FAILFAST:
                raise ValidationError(
                    "schema", f"{journal} offset {at}: the document does not fit the schema: "
                    f"column {name}: {misfit} (mode FAILFAST)") from None
            record.malformed = True
            record.values[name] = None
    return record


def _batch(journal: str, records: list[_Record], ids: UUIDColumns, schema: pa.Schema,
           parse: ParseMode) -> pa.RecordBatch:
    columns = []
    for f in schema:
        if f.name == "journal":
            values: list[Any] = [journal] * len(records)
        elif f.name == "offset":
            values = [r.offset for r in records]
        elif f.name == "uuid":
            values = [r.uuid for r in records]
        elif f.name == "producer":
            values = [r.uuid[24:] if r.uuid else None for r in records]
        elif f.name == "timestamp":
            columns.append(publish_times(ids.clock))
            continue
        elif f.name == "value":
            values = [r.text for r in records]
        elif f.name == parse.corrupt:
            values = [r.text if r.malformed else None for r in records]
        else:
            values = [(r.values or {}).get(f.name) for r in records]
        columns.append(pa.array(values, type=f.type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)
