"""Writing a journals DataFrame out as files: the Spark half of `gazctl journals export`.

`export_plan` runs the read (`spark.read.format("gazette")` through
journals_frame.load_frame) on a session of `master` and writes the table
with Spark's writer; the caller's plan of the same read (made to refuse bad
input before Spark starts) gives the summary's kind and journals. CSV cannot hold nested
values, so nested columns of JSON documents are written there as JSON text.
A failed Spark job becomes one GazetteError line: the Python exception an
executor raised when there is one (a fragment that could not be read, a
record that does not decode), never the JVM's stack trace.

Run it through `gazctl journals export`, or as a Spark application:
`spark-submit spark_jobs/frame_export.py --broker.address URL -l SELECTOR --to DIR`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gazette_core.errors import GazetteError
from spark_jobs.job_errors import error_exit, failure_line
from spark_jobs.journals_frame import frame_options, load_frame
from spark_jobs.selection import FILE_ROOT_ENV, list_selection
from spark_jobs.session import DEFAULT_MASTER, SparkMasterUnreachable, get_session
from spark_jobs.source.frame_plan import FramePlan, plan_frame

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

FORMATS = ("parquet", "json", "csv")


class ExportFailed(GazetteError):
    """The Spark job reading or writing the journals failed."""


@dataclass(frozen=True)
class ExportSummary:
    kind: str
    format: str
    journals: int
    rows: int


def spark_failure(exc: Exception) -> ExportFailed:
    """The one line worth showing of a failed Spark job."""
    return ExportFailed(f"export failed: {failure_line(exc)}")


def flat_for_csv(df: DataFrame) -> DataFrame:
    """`df` with nested columns (structs, arrays, maps) as JSON text."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, MapType, StructType

    nested = (ArrayType, MapType, StructType)
    return df.select(*(F.to_json(F.col(f.name)).alias(f.name)
                       if isinstance(f.dataType, nested) else F.col(f.name)
                       for f in df.schema.fields))


def export_plan(plan: FramePlan, options: Mapping[str, str], to: str, file_format: str, *,
                schema: StructType | str | None = None, master: str = DEFAULT_MASTER,
                overwrite_empty: bool = False) -> ExportSummary:
    """Read the journals of the data source's `options` on `master` and write them to `to`
    as `file_format`; `plan` is the caller's plan of the same read.

    `overwrite_empty` lets Spark replace `to`, which the caller found to be
    an empty directory (Spark refuses any existing path otherwise).
    """
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException
    from pyspark.storagelevel import StorageLevel

    if file_format not in FORMATS:
        raise GazetteError(f"unknown export format {file_format!r}")
    try:
        spark = get_session(master, app_name="gazette-journals-export")
    except SparkMasterUnreachable as exc:
        exc.hint = "start the master, or export in this process with --spark-master local[*]"
        raise
    try:
        df = load_frame(spark, dict(options), schema).persist(StorageLevel.MEMORY_AND_DISK)
        out = flat_for_csv(df) if file_format == "csv" else df
        writer = out.write.mode("overwrite" if overwrite_empty else "errorifexists")
        if file_format == "csv":
            writer = writer.option("header", "true")
        writer.format(file_format).save(to)
        rows = df.count()
        df.unpersist()
    except (PySparkException, Py4JError) as exc:
        raise spark_failure(exc) from None
    return ExportSummary(kind=plan.kind, format=file_format, journals=len(plan.tasks), rows=rows)


def main(argv: list[str] | None = None) -> int:
    """`spark-submit spark_jobs/frame_export.py` entry: prints the summary as one JSON line.

    Exit codes: 0 done, 1 error, 2 usage, 3 selector matched nothing.
    """
    parser = argparse.ArgumentParser(prog="frame_export.py", description=__doc__.split("\n")[0])
    parser.add_argument("--broker.address", dest="address", required=True)
    parser.add_argument("-l", "--selector", required=True)
    parser.add_argument("--to", required=True)
    parser.add_argument("--format", dest="file_format", choices=FORMATS, default="parquet")
    parser.add_argument("--schema", default=None)
    parser.add_argument("--since", type=int, default=0,
                        help="Skip fragments persisted before this unix time.")
    parser.add_argument("--persisted-only", action="store_true")
    parser.add_argument("--spark-master", default=DEFAULT_MASTER)
    parser.add_argument("--file-root", default=os.environ.get(FILE_ROOT_ENV) or None)
    parser.add_argument("--file-only", action="store_true")
    args = parser.parse_args(argv)
    try:
        plan = plan_frame(list_selection(args.address, args.selector, to_head=True),
                          broker=args.address,
                          since=args.since, unpersisted=not args.persisted_only,
                          file_root=args.file_root, file_only=args.file_only)
        options = frame_options(args.selector, broker=args.address, since=args.since,
                                unpersisted=not args.persisted_only, file_root=args.file_root,
                                file_only=args.file_only)
        summary = export_plan(plan, options, args.to, args.file_format, schema=args.schema,
                              master=args.spark_master)
    except GazetteError as exc:
        return error_exit(exc)
    print(json.dumps(dataclasses.asdict(summary), separators=(",", ":")))
    return 0


if __name__ == "__main__":
    # Under spark-submit this file is __main__; run the importable module instead so
    # executors unpickle its functions by reference.
    from spark_jobs import frame_export as _job

    sys.exit(_job.main())
