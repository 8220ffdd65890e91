"""Count clicks per user per event-time window, from the clicks journal to the counts journal.

A Spark Structured Streaming query: `readStream.format("gazette")` of
examples/click-windows/clicks, an event-time `window` per user with a
watermark, and `writeStream.format("gazette")` of each closed window's count
to examples/click-windows/counts. In append mode a window is written once,
when the watermark (the latest click's time less the allowed lateness) has
passed its end; a click later than that is dropped, as Spark does.

The gazette sink publishes each micro-batch's rows in a transaction that
only the batch's commit acknowledges, and the query's checkpoint records
which batches committed: a restarted query resumes from its checkpoint and a
replayed batch leaves nothing visible twice (docs/dataframes.md).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from examples.click_windows.messages import CLICKS_JOURNAL, COUNTS_JOURNAL
from examples.local import default_broker
from spark_jobs.datasource import FORMAT, register

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

CLICK_SCHEMA = "user STRING, page STRING, ts STRING"
# As Click.ts: UTC, milliseconds, a Z suffix (the session's time zone is UTC).
TS_FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"
# Names the counts journal's register that records the query's last committed batch:
# it stays with the checkpoint (a new checkpoint with the same id would skip batches).
SINK_ID = "click-windows"


def window_counts(spark: SparkSession, broker: str, file_root: str | None = None,
                  window: str = "10 seconds", lateness: str = "5 seconds") -> DataFrame:
    """The streaming DataFrame of counts: one row per user per closed window."""
    from pyspark.sql import functions as F

    reader = spark.readStream.format(FORMAT).schema(CLICK_SCHEMA) \
        .option("selector", f"name={CLICKS_JOURNAL}").option("broker", broker)
    if file_root:
        reader = reader.option("fileRoot", file_root)
    clicks = reader.load().withColumn("event_time", F.to_timestamp("ts"))
    counted = clicks.withWatermark("event_time", lateness) \
        .groupBy(F.window("event_time", window), "user").count()
    return counted.select(
        "user",
        F.date_format("window.start", TS_FORMAT).alias("window_start"),
        F.date_format("window.end", TS_FORMAT).alias("window_end"),
        F.col("count").alias("clicks"))


def start(spark: SparkSession, checkpoint: str, broker: str, file_root: str | None = None,
          window: str = "10 seconds", lateness: str = "5 seconds",
          available_now: bool = False) -> StreamingQuery:
    """Start the query; it resumes from `checkpoint` when that holds an earlier run's."""
    register(spark)  # any session will do, not only get_session()'s
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    writer = window_counts(spark, broker, file_root, window, lateness).writeStream \
        .format(FORMAT).outputMode("append").option("broker", broker) \
        .option("journal", COUNTS_JOURNAL).option("sinkId", SINK_ID) \
        .option("checkpointLocation", checkpoint)
    if available_now:
        writer = writer.trigger(availableNow=True)
    return writer.start()


def main(argv: list[str] | None = None) -> None:
    from spark_jobs.session import get_session, stop_session

    parser = argparse.ArgumentParser(prog="python -m examples.click_windows.job",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True,
                        help="the query's checkpoint directory (kept across runs)")
    parser.add_argument("--broker.address", dest="address", default=default_broker(),
                        help="Broker endpoint (default: $BROKER_ADDRESS, else the local stack's)")
    parser.add_argument("--file-root", default=None,
                        help="root of file:// fragment stores (default: $BROKER_FILE_ROOT)")
    parser.add_argument("--window", default="10 seconds", help="window length")
    parser.add_argument("--lateness", default="5 seconds",
                        help="how late a click may come (the watermark's delay)")
    parser.add_argument("--available-now", action="store_true",
                        help="process what the journal holds now, then stop")
    parser.add_argument("--spark-master", default="local[*]", help="Spark master URL")
    args = parser.parse_args(argv)
    spark = get_session(args.spark_master, app_name="click-windows")
    try:
        query = start(spark, args.checkpoint, args.address, args.file_root, args.window,
                      args.lateness, args.available_now)
        query.awaitTermination()
    except KeyboardInterrupt:
        pass  # Ctrl-C: the checkpoint holds every committed batch; a restart resumes there
    finally:
        stop_session()


if __name__ == "__main__":
    main()
