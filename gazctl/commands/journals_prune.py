"""`gazctl journals prune`: delete persisted fragments older than their journal's retention.

Listing runs here through the broker; the deletes run as a Spark job
(`spark_jobs.prune`) on `--spark-master`. The summary always reaches stdout.
"""

from __future__ import annotations

import enum
import json
import sys

from gazctl import logs
from gazctl.commands.fragment_listing import list_selection
from gazctl.commands.prune_counts import counts_table
from gazctl.commands.selection import require_selector
from gazctl.config import broker_address
from gazctl.file_root import FileOnly, FileRoot, resolve_file_root
from gazctl.options import (
    BrokerAddress,
    DryRun,
    OutputFormat,
    RequiredSelector,
    SparkMaster,
    Timeout,
)
from gazctl.render import activity, stderr
from gazette_core.errors import GazetteError
from spark_jobs.prune import PruneSummary, prune_selection
from spark_jobs.session import DEFAULT_MASTER


class Format(enum.StrEnum):
    table = "table"
    text = "text"  # the older name of table
    json = "json"


def prune(
    selector: str = RequiredSelector,
    dry_run: bool = DryRun(),
    spark_master: str = SparkMaster(DEFAULT_MASTER, "the deletes"),
    output: Format = OutputFormat(Format.table),
    file_root: str | None = FileRoot,
    file_only: bool = FileOnly,
    broker: str | None = BrokerAddress,
    timeout: str = Timeout,
) -> None:
    """Delete persisted fragments older than their journal's fragment retention.

    Retention 0 keeps fragments forever; suspended journals are skipped. Deletes
    refused for lack of permission are counted, not fatal; fragments the store no
    longer has are counted as already gone, and a warning says so when no delete
    found anything. Exit codes: 0 done, 1 error (or a failed delete, or file://
    stores with no known file root), 2 usage error, 3 the selector matched nothing.
    """
    sel = require_selector(selector)
    root, _ = resolve_file_root(file_root, broker_address(broker))
    selection = list_selection(broker, sel, selector, timeout)
    # The deletes' outcomes come back only once the whole Spark job is collected, so they
    # get a transient spinner (covering Spark's start-up too) rather than a count. Spark's JVM
    # writes to its log file (spark_jobs.session), not over the spinner or the table.
    summary = prune_selection(
        selection, dry_run=dry_run, master=spark_master, file_root=root, file_only=file_only,
        while_deleting=lambda n: activity(f"Deleting {n} expired fragments on {spark_master}"))
    for message in [*summary.errors, *summary.warnings]:
        logs.warn(message)
    _render(summary, output)
    if summary.failed:
        raise GazetteError(f"{summary.failed} fragment deletes failed (see the warnings above)")


def _render(summary: PruneSummary, output: Format) -> None:
    if output is Format.json:
        sys.stdout.write(json.dumps(summary.as_dict(), separators=(",", ":")) + "\n")
        return
    if summary.dry_run:
        stderr.print("dry run: nothing was deleted", highlight=False)
    counts_table([["Journals", str(summary.journals), ""],
                  ["Skipped (suspended)", str(summary.journals_skipped), ""]], summary)
