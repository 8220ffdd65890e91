"""A streaming query the sink tests run (and kill) as a process of its own.

Usage: python -m tests.spark_jobs.sink.sink_stream_job BROKER INPUT CHECKPOINT JOURNAL SINK_ID

It streams the JSON files of INPUT to JOURNAL through the gazette sink, one
file per micro-batch, and keeps polling for more until it is killed. The
test restarts the same query in its own process (test_sink_stream.drain).
"""

from __future__ import annotations

import sys

from spark_jobs.datasource import register
from spark_jobs.session import get_session


def main(broker: str, source: str, checkpoint: str, journal: str, sink_id: str) -> None:
    spark = get_session("local[2]", app_name="sink-stream")
    register(spark)
    rows = spark.readStream.schema("n LONG").option("maxFilesPerTrigger", 1).json(source)
    (rows.writeStream.format("gazette").option("broker", broker).option("journal", journal)
     .option("sinkId", sink_id).option("checkpointLocation", checkpoint)
     .trigger(processingTime="100 milliseconds").start().awaitTermination())


if __name__ == "__main__":
    main(*sys.argv[1:])
