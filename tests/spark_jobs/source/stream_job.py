"""A streaming query as its own process, for tests that kill and restart it.

    python stream_job.py BROKER SELECTOR OUTPUT CHECKPOINT (continuous|available-now) MAX_BYTES

Reads the journals SELECTOR matches with `readStream.format("gazette")` and
writes (journal, offset, uuid) rows into OUTPUT with Spark's JSON file sink,
checkpointing in CHECKPOINT. `continuous` runs until killed; `available-now`
stops once it has read what was there when it started.
"""

from __future__ import annotations

import sys

from spark_jobs.datasource import register
from spark_jobs.session import get_session


def main(broker: str, selector: str, output: str, checkpoint: str, mode: str,
         max_bytes: str) -> None:
    spark = get_session("local[2]", app_name="stream-job")
    register(spark)
    reader = (spark.readStream.format("gazette").option("broker", broker)
              .option("selector", selector))
    if int(max_bytes):
        reader = reader.option("maxBytesPerTrigger", max_bytes)
    writer = (reader.load().select("journal", "offset", "uuid").writeStream.format("json")
              .option("checkpointLocation", checkpoint))
    writer = (writer.trigger(availableNow=True) if mode == "available-now"
              else writer.trigger(processingTime="100 milliseconds"))
    writer.start(output).awaitTermination()


if __name__ == "__main__":
    main(*sys.argv[1:])
