"""`gazctl journals prune`: delete persisted fragments older than their journal's retention.

Listing runs here through the broker; the deletes run as a Spark job
(`spark_jobs.prune`) on `--spark-master`. The summary always reaches stdout.
"""

from __future__ import annotations

import enum
import json
import sys

import typer

from gazctl.commands.selection import NoMatchError, require_selector
from gazctl.config import BrokerAddress, OutputFormat, RequiredSelector, Timeout, run
from gazctl.render import activity, humanize_bytes, journal_progress, stderr, table
from gazette_core.errors import GazetteError
from spark_jobs.prune import (
    DEFAULT_FILE_ROOT,
    NothingMatched,
    PruneSummary,
    fetch_selection,
    prune_selection,
)
from spark_jobs.session import DEFAULT_MASTER


class Format(enum.StrEnum):
    table = "table"
    text = "text"  # the older name of table
    json = "json"


def prune(
    selector: str = RequiredSelector,
    dry_run: bool = typer.Option(False, "--dry-run",
                                 help="Count what would be pruned; delete nothing."),
    spark_master: str = typer.Option(DEFAULT_MASTER, "--spark-master",
                                     help="Spark master running the deletes, e.g. "
                                          "spark://host:7077."),
    output: Format = OutputFormat(Format.table),
    file_root: str = typer.Option(DEFAULT_FILE_ROOT, "--file-root", envvar="BROKER_FILE_ROOT",
                                  show_envvar=True,
                                  help="Directory rooting file:// fragment stores (as the "
                                       "brokers' --broker.file-root)."),
    broker: str | None = BrokerAddress,
    timeout: str = Timeout,
) -> None:
    """Delete persisted fragments older than their journal's fragment retention.

    Retention 0 keeps fragments forever; suspended journals are skipped. Deletes
    refused for lack of permission are counted, not fatal. Exit codes: 0 done,
    1 error (or a failed delete), 2 usage error, 3 the selector matched nothing.
    """
    sel = require_selector(selector)
    try:
        # Both bars are transient and shown only when stdout is a terminal, so the notes,
        # warnings and summary below come out exactly as they do without them.
        with journal_progress("Listing fragments") as progress:
            selection = run(broker, lambda stub: fetch_selection(stub, sel, selector,
                                                                 progress=progress), timeout)
    except NothingMatched as exc:
        raise NoMatchError("--selector", str(exc)) from None
    for name in selection.suspended:
        stderr.print(f"note: skipped suspended journal {name}", highlight=False, markup=False)
    # The deletes' outcomes come back only once the whole Spark job is collected, so they
    # get a spinner (covering Spark's start-up too) rather than a count. Spark's JVM writes
    # its own warnings straight to fd 2, past rich's redirect: one may share a line with it.
    summary = prune_selection(
        selection, dry_run=dry_run, master=spark_master, file_root=file_root,
        while_deleting=lambda n: activity(f"Deleting {n} expired fragments on {spark_master}"))
    for message in summary.errors:
        stderr.print(f"warning: {message}", highlight=False, markup=False)
    _render(summary, output)
    if summary.failed:
        raise GazetteError(f"{summary.failed} fragment deletes failed (see the warnings above)")


def _render(summary: PruneSummary, output: Format) -> None:
    if output is Format.json:
        sys.stdout.write(json.dumps(summary.as_dict(), separators=(",", ":")) + "\n")
        return
    if summary.dry_run:
        stderr.print("dry run: nothing was deleted", highlight=False)
    table(["Journals", "Skipped", "Fragments", "Pruned", "Pruned bytes", "Kept", "Kept bytes",
           "Permission denied", "Failed"],
          [[str(summary.journals), str(summary.journals_skipped), str(summary.fragments),
            str(summary.fragments_pruned), humanize_bytes(summary.bytes_pruned),
            str(summary.fragments_kept), humanize_bytes(summary.bytes_kept),
            str(summary.permission_denied), str(summary.failed)]])
