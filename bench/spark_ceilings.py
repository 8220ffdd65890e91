"""What any Python data source can reach in this Spark, measured beside the `gazette` one.

Two data sources that do no work of their own:

- `gazette-bench-ceiling` reads the anchor's JSON-lines files once per Python
  worker into Arrow batches and then only yields them again: `kind=row`
  gives the columns of a schemaless `gazette` read (journal, offset, uuid,
  producer, timestamp, value), `kind=doc` the bench schema's columns
  (n, key, text) decoded. What a read of it costs is Spark's own path from a
  Python reader to the JVM, so its speed over the file scan's is the highest
  ratio a Python reader of those columns can have here.
- `gazette-bench-null` takes a write's Arrow batches and drops them: the
  highest ratio a Python writer can have against `df.write.json`.

Workers import this module by name (classes defined here are pickled by
reference), so the JVM must be started with the repository on PYTHONPATH:
`with_repo_on_path()` before the process's first session (a JVM outlives its
sessions, and its workers take the path it started with). Batches are cached per worker
process; a run on a worker that has not built them yet is slower, which the
bench's best-of-runs leaves out.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

READER = "gazette-bench-ceiling"
WRITER = "gazette-bench-null"
ROW = ("journal STRING, offset BIGINT, uuid STRING, producer STRING, timestamp TIMESTAMP, "
       "value STRING")
DOC = "n LONG, key STRING, text STRING"
BATCH_ROWS = 8192
UUID_AT = len('{"uuid": "')  # Where the bench lines' UUID text starts (json.dumps spacing).
_batches: dict[tuple[str, str], list[pa.RecordBatch]] = {}


def with_repo_on_path() -> None:
    """Put the repository on PYTHONPATH, for the Python workers of a JVM started after."""
    root = str(Path(__file__).resolve().parent.parent)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *paths])


def _row_batches(path: str) -> list[pa.RecordBatch]:
    import pyarrow as pa
    import pyarrow.compute as pc

    data = Path(path).read_bytes()
    lines = pa.array(data.decode().splitlines(), pa.string())
    n = len(lines)
    lengths = pc.add(pc.binary_length(lines), 1).to_numpy()
    offsets = pa.array(lengths.cumsum() - lengths, pa.int64())
    table = pa.table({
        "journal": pa.array([path] * n, pa.string()),
        "offset": offsets,
        "uuid": pc.utf8_slice_codeunits(lines, UUID_AT, UUID_AT + 36),
        "producer": pa.array(["0102030405ff"] * n, pa.string()),
        "timestamp": pa.array([0] * n, pa.timestamp("us", tz="UTC")),
        "value": lines,
    })
    return table.to_batches(max_chunksize=BATCH_ROWS)


def _doc_batches(path: str) -> list[pa.RecordBatch]:
    import pyarrow as pa
    import pyarrow.json as pj

    schema = pa.schema([("n", pa.int64()), ("key", pa.string()), ("text", pa.string())])
    table = pj.read_json(path, parse_options=pj.ParseOptions(
        explicit_schema=schema, unexpected_field_behavior="ignore"))
    return table.select(schema.names).to_batches(max_chunksize=BATCH_ROWS)


def batches(path: str, kind: str) -> list[pa.RecordBatch]:
    """The file's batches of `kind`, built once in this process."""
    key = (path, kind)
    if key not in _batches:
        _batches[key] = _row_batches(path) if kind == "row" else _doc_batches(path)
    return _batches[key]


class _Reader(DataSourceReader):
    def __init__(self, files: list[str], kind: str) -> None:
        self.files, self.kind = files, kind

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(path) for path in self.files]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from batches(partition.value, self.kind)


class CeilingSource(DataSource):
    """Options: `files` (a directory of JSON-lines files, one partition each), `kind`."""

    @classmethod
    def name(cls) -> str:
        return READER

    def schema(self) -> str:
        return ROW if self.options.get("kind") == "row" else DOC

    def reader(self, schema: Any) -> DataSourceReader:
        files = sorted(str(p) for p in Path(self.options["files"]).iterdir())
        return _Reader(files, self.options.get("kind", "doc"))


class _Dropped(DataSourceArrowWriter):
    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        for _ in iterator:
            pass
        return WriterCommitMessage()


class NullSink(DataSource):
    @classmethod
    def name(cls) -> str:
        return WRITER

    def writer(self, schema: Any, overwrite: bool) -> DataSourceArrowWriter:
        return _Dropped()


def register(spark: SparkSession) -> None:
    spark.dataSource.register(CeilingSource)
    spark.dataSource.register(NullSink)
