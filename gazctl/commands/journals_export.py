"""`gazctl journals export`: write selected journals out as Parquet, JSON or CSV files.

Listing runs here through the broker (bad input is refused before Spark
starts); reading and writing run as a Spark job (`spark.read.format("gazette")`
through `spark_jobs.journals_frame`) on `--spark-master`: executors read fragments
straight from their stores, keep committed messages only, and Spark writes
the table to `--to`. One line on stdout says what was written.
"""

from __future__ import annotations

import enum
from pathlib import Path

import typer

from gazctl.commands.fragment_listing import list_selection
from gazctl.commands.selection import require_selector
from gazctl.config import broker_address, connect_timeout
from gazctl.connection import client_config
from gazctl.file_root import FileOnly, FileRoot, resolve_file_root
from gazctl.options import BrokerAddress, RequiredSelector, SparkMaster, Timeout
from gazctl.render import activity
from gazctl.timeflags import since_to_unix
from gazctl.usage import UsageError
from spark_jobs.decode.content import RAW
from spark_jobs.frame_export import ExportSummary, export_plan
from spark_jobs.journals_frame import frame_options
from spark_jobs.session import DEFAULT_MASTER
from spark_jobs.source.frame_plan import plan_frame


class FileFormat(enum.StrEnum):
    parquet = "parquet"
    json = "json"
    csv = "csv"


def export(
    selector: str = RequiredSelector,
    to: str = typer.Option(..., "--to", help="Directory to write the files to; it must not "
                                             "exist yet or be empty."),
    file_format: FileFormat = typer.Option(FileFormat.parquet, "--format",
                                           help="Format of the files written (not of stdout)."),
    since: str = typer.Option("", "--since", help="Skip fragments persisted longer ago than "
                                                  "this duration, e.g. 2h, or seconds."),
    schema: str = typer.Option("", "--schema", help="Columns of the messages as Spark DDL, "
                                                    "e.g. 'n LONG, text STRING'; default: "
                                                    "inferred (JSON), _c1... strings (CSV)."),
    persisted_only: bool = typer.Option(False, "--persisted-only",
                                        help="Leave out content not yet persisted to a "
                                             "store (still in the brokers' spools)."),
    spark_master: str = SparkMaster(DEFAULT_MASTER),
    file_root: str | None = FileRoot,
    file_only: bool = FileOnly,
    broker: str | None = BrokerAddress,
    timeout: str = Timeout,
) -> None:
    """Export journals as a table: one row per committed message, or raw bytes.

    JSON-lines journals get a column per document field, CSV journals a column per
    field; both get journal, offset, uuid and producer columns. Journals without a
    message framing export their bytes (journal, offset, data). Exit codes: 0 done,
    1 error, 2 usage error, 3 the selector matched nothing.
    """
    sel = require_selector(selector)
    destination = _check_destination(to)
    begin = since_to_unix(since)
    address = broker_address(broker)
    root, _ = resolve_file_root(file_root, address)
    selection = list_selection(broker, sel, selector, timeout, to_head=True)
    client = client_config()
    plan = plan_frame(selection, broker=address, since=begin, unpersisted=not persisted_only,
                      file_root=root, file_only=file_only, client=client)
    options = frame_options(selector, broker=address, since=begin,
                            unpersisted=not persisted_only, file_root=root, file_only=file_only,
                            timeout=connect_timeout(timeout), client=client)
    if plan.kind == RAW and file_format is FileFormat.csv:
        raise UsageError("--format", "journals without a message framing hold bytes, which "
                                     "CSV cannot: export them as parquet or json")
    with activity(f"Exporting {len(plan.tasks)} journals on {spark_master}"):
        summary = export_plan(plan, options, to, file_format.value, schema=schema or None,
                              master=spark_master, overwrite_empty=destination)
    _report(summary, to)


def _check_destination(to: str) -> bool:
    """Refuse a destination holding anything; True when it is an existing empty directory."""
    if "://" in to:
        return False  # Another file system: Spark refuses an existing path itself.
    path = Path(to)
    if not path.exists():
        return False
    if not path.is_dir():
        raise UsageError("--to", f"{to!r} exists and is not a directory")
    if any(path.iterdir()):
        raise UsageError("--to", f"{to!r} is not empty; export to a new directory")
    return True


def _report(summary: ExportSummary, to: str) -> None:
    typer.echo(f"exported {summary.rows} rows of {summary.journals} journals "
               f"({summary.kind}) to {to} as {summary.format}")
