"""`df.write.format("gazette")` and `df.writeStream.format("gazette")`: the exactly-once sink.

Spark builds the writer on the driver (options and targets are checked
there, plan.py), pickles it to the executors, whose tasks publish
their rows uncommitted (publish.py), and calls `commit` or `abort` on
the driver with the tasks' commit messages (commit.py). Rows of failed
or speculative task attempts are never in those messages, so no ACK ever
commits them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter

from gazette_core.errors import ValidationError
from spark_jobs.sink.attempts import new_nonce
from spark_jobs.sink.commit import commit, failed_of, query_of, roll_back, spans_of
from spark_jobs.sink.options import sink_options
from spark_jobs.sink.plan import SinkPlan, plan_sink
from spark_jobs.sink.publish import publish_task

if TYPE_CHECKING:
    from collections.abc import Iterator

    import pyarrow as pa
    from pyspark.sql.datasource import WriterCommitMessage
    from pyspark.sql.types import StructType



class BatchWriter(DataSourceArrowWriter):
    """A batch write: visible all at once per journal when the job commits."""

    def __init__(self, options: dict[str, str], schema: StructType, overwrite: bool) -> None:
        if overwrite:
            raise ValidationError("mode overwrite", "journals are append-only: write with "
                                  "mode(\"append\")")
        self.plan: SinkPlan = plan_sink(sink_options(options, streaming=False), schema)
        self.nonce = new_nonce()

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return publish_task(self.plan, self.nonce, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        commit(self.plan.options, self.plan.width, spans_of(messages),
               failed=failed_of(self.nonce, messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        roll_back(self.plan.options, self.plan.width,
                  spans_of(messages) + failed_of(self.nonce, messages))


class StreamWriter(DataSourceStreamArrowWriter):
    """A streaming write: each micro-batch committed once, guarded by the sink's register."""

    def __init__(self, options: dict[str, str], schema: StructType, overwrite: bool) -> None:
        # `overwrite` is Spark's complete output mode: every batch's rows are appended.
        self.plan: SinkPlan = plan_sink(sink_options(options, streaming=True), schema)
        self.nonce = new_nonce()

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return publish_task(self.plan, self.nonce, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        commit(self.plan.options, self.plan.width, spans_of(messages), batchId,
               failed_of(self.nonce, messages), query_of(messages))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        roll_back(self.plan.options, self.plan.width,
                  spans_of(messages) + failed_of(self.nonce, messages))
