"""The `gazette` data source: journals read and written by Spark (Python Data Source API).

`spark.read.format("gazette")`, `spark.readStream.format("gazette")`,
`df.write.format("gazette")` and `df.writeStream.format("gazette")` all start
here; `register(spark)` makes the format known to a session (`get_session`
does it). This class only checks options and hands out the mode's reader or
writer: batch reads plan in source/batch_reader.py, streaming reads in
source/stream_reader.py, writes in sink/writer.py; every task's rows come from
source/range_read.py (reads) as Arrow record batches.

Spark runs these methods in Python workers of its own (on the driver for
planning, on executors for tasks), so everything here must pickle and may
not rely on the caller's process state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSource

from spark_jobs.source.options import read_options

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.datasource import (
        DataSourceReader,
        DataSourceStreamReader,
        DataSourceStreamWriter,
        DataSourceWriter,
    )
    from pyspark.sql.types import StructType

FORMAT = "gazette"


class GazetteDataSource(DataSource):
    """Journals as a Spark table: options in, a reader or writer out."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        """The columns when the caller gives no schema: those of the journals' framing."""
        from spark_jobs.source.batch_reader import default_schema

        # Spark asks before it says which read this is: either kind's options pass.
        return default_schema(read_options(self.options, streaming=None))

    def reader(self, schema: StructType) -> DataSourceReader:
        from spark_jobs.source.batch_reader import BatchReader

        return BatchReader(read_options(self.options, streaming=False), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from spark_jobs.source.stream_reader import StreamReader

        return StreamReader(read_options(self.options, streaming=True), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from spark_jobs.sink.writer import BatchWriter

        return BatchWriter(dict(self.options), schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from spark_jobs.sink.writer import StreamWriter

        return StreamWriter(dict(self.options), schema, overwrite)


def register(spark: SparkSession) -> None:
    """Make `format("gazette")` known to `spark` (idempotent); its writes append unless
    given another mode (sink/save_mode.py)."""
    from spark_jobs.sink.save_mode import default_to_append

    spark.dataSource.register(GazetteDataSource)
    default_to_append(FORMAT)
