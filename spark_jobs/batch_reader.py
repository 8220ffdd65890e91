"""Batch reads of the `gazette` data source: the driver plans ranges, executors read them.

The driver lists the selected journals and their fragments through a broker
and plans one partition per journal range (a `RangeTask`); each executor
reads its range straight from the stores (range_read.py) and yields Arrow
record batches of the committed messages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSourceReader, InputPartition

from spark_jobs.frame_columns import row_schema
from spark_jobs.journals_frame import list_selection, plan_frame, shared_kind
from spark_jobs.range_read import RangeTask, read_range
from spark_jobs.source_options import ReadOptions

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
    selection = list_selection(options.broker, options.selector, options.timeout)
    return row_schema(shared_kind([spec for spec, _ in selection.journals]))


class BatchReader(DataSourceReader):
    def __init__(self, options: ReadOptions, schema: StructType) -> None:
        self.options = options
        self.schema_json = schema.json()

    def partitions(self) -> Sequence[InputPartition]:
        o = self.options
        plan = plan_frame(list_selection(o.broker, o.selector, o.timeout), broker=o.broker,
                          since=o.since, unpersisted=o.unpersisted, file_root=o.file_root,
                          file_only=o.file_only, client=o.client)
        tasks = []
        for source in plan.tasks:
            fragments = source.parsed()
            tasks.append(RangePartition(RangeTask(
                source=source, begin=fragments[0].begin, end=fragments[-1].end,
                schema_json=self.schema_json)))
        return tasks

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, RangePartition)
        yield from read_range(partition.task)
