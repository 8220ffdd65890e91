"""Batch reads of the `gazette` data source: the driver plans ranges, executors read them.

The driver lists the selected journals and their fragments through a broker,
cuts each journal into ranges of about `splitBytes` seeded with the producer
states at their begins (range_plan.py), and hands out one partition per
range (a `RangeTask`); each executor reads its range straight from the
stores (range_read.py) and yields Arrow record batches of the committed
messages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSourceReader, InputPartition

from spark_jobs.decode.arrow_frames import spark_columns, task_schema_json
from spark_jobs.decode.columns import source_row_schema
from spark_jobs.decode.content import JSON
from spark_jobs.selection import SPARK, NothingMatched, list_selection
from spark_jobs.source.frame_plan import plan_frame, shared_kind
from spark_jobs.source.offset_checks import check_offsets
from spark_jobs.source.options import ReadOptions
from spark_jobs.source.range_plan import plan_ranges, read_offsets
from spark_jobs.source.range_read import RangeScanner, RangeTask, read_range

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    import pyarrow as pa
    from pyspark.sql.types import StructType


class RangePartition(InputPartition):
    """One Spark task: a `RangeTask`."""

    def __init__(self, task: RangeTask) -> None:
        super().__init__(task)
        self.task = task


def default_schema(options: ReadOptions) -> StructType:
    """The columns of the selected journals' framing, when no schema is given."""
    try:
        selection = list_selection(options.broker, options.selector, options.timeout,
                                   options.client)
    except NothingMatched:
        # A stream may start (or restart) before any journal matches: JSON lines' columns.
        # A batch read still fails at planning, naming the selector.
        return source_row_schema(JSON)
    return source_row_schema(shared_kind([spec for spec, _ in selection.journals], SPARK))


class BatchReader(DataSourceReader):
    def __init__(self, options: ReadOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        self.schema_json = task_schema_json(schema, options.mode, options.corrupt_column)

    def partitions(self) -> Sequence[InputPartition]:
        o = self.options
        selection = list_selection(o.broker, o.selector, o.timeout, o.client, to_head=True)
        plan = plan_frame(selection, broker=o.broker, since=o.since, unpersisted=o.unpersisted,
                          file_root=o.file_root, file_only=o.file_only, client=o.client,
                          ring_size=o.ring_size, words=SPARK)
        # A schema that does not fit the journals is refused before any task runs.
        spark_columns(plan.kind, self.schema, o.corrupt_column)
        starting, ending = read_offsets(
            o.starting_offsets, o.ending_offsets,
            [spec.name for spec, _ in selection.journals] + selection.suspended)
        check_offsets([(spec.name, fragments) for spec, fragments in selection.journals],
                      plan.tasks, starting, ending, o.fail_on_data_loss)
        scanner = RangeScanner()
        try:
            tasks = plan_ranges(plan.tasks, starting=starting, ending=ending,
                                split_bytes=o.split_bytes, schema_json=self.schema_json,
                                scan=scanner, ahead=scanner.ahead)
        finally:
            scanner.close()
        return [RangePartition(task) for task in tasks]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, RangePartition):
            return  # Spark's stand-in for a plan of no ranges (nothing to read).
        yield from read_range(partition.task)
