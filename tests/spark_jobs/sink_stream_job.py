"""A streaming query the sink tests run (and kill) as a process of its own.

Usage: python -m tests.spark_jobs.sink_stream_job BROKER INPUT CHECKPOINT JOURNAL SINK_ID MODE

It streams the JSON files of INPUT to JOURNAL through the gazette sink;
MODE "run" takes one file per micro-batch and keeps polling until killed,
"drain" processes what is left (Trigger.AvailableNow) and exits.
"""

from __future__ import annotations

import sys

from spark_jobs.datasource import register
from spark_jobs.session import get_session


def main(broker: str, source: str, checkpoint: str, journal: str, sink_id: str,
         mode: str) -> None:
    spark = get_session("local[2]", app_name="sink-stream")
    register(spark)
    # One file per micro-batch while running; a restart drains the rest in one go.
    per_batch = "1" if mode == "run" else "1000"
    rows = spark.readStream.schema("n LONG").option("maxFilesPerTrigger", per_batch).json(source)
    writer = (rows.writeStream.format("gazette").option("broker", broker)
              .option("journal", journal).option("sinkId", sink_id)
              .option("checkpointLocation", checkpoint))
    if mode == "drain":
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime="100 milliseconds")
    writer.start().awaitTermination()


if __name__ == "__main__":
    main(*sys.argv[1:])
