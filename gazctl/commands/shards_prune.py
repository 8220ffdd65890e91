"""`gazctl shards prune`: delete recovery-log fragments that no stored hints can need.

Hints and log specs are gathered here through the consumer and brokers; the
listing, classification and deletes of each log run as a Spark job
(`spark_jobs.shards_prune`) on `--spark-master`. The summary always reaches
stdout; in JSON mode an audit line per (would-be) deletion comes before it.
"""

from __future__ import annotations

import enum
import json
import sys

import typer

from gazctl import logs
from gazctl.commands.prune_counts import counts_table
from gazctl.commands.selection import NoMatchError, require_selector
from gazctl.config import broker_address
from gazctl.consumer_config import Clients, ConsumerAddress, run_shards
from gazctl.file_root import FileOnly, FileRoot, resolve_file_root
from gazctl.options import BrokerAddress, DryRun, OutputFormat, SparkMaster, Timeout
from gazctl.render import activity, humanize_bytes, stderr
from gazette_core.errors import GazetteError
from spark_jobs.selection import NothingMatched
from spark_jobs.session import DEFAULT_MASTER
from spark_jobs.shards_prune import Gathered, ShardsPruneSummary, gather, prune_gathered


class Format(enum.StrEnum):
    table = "table"
    text = "text"  # the older name of table
    json = "json"


def prune(
    selector: str = typer.Option(..., "-l", "--selector",
                                 help="Label selector of the shards, e.g. 'app=stream-sum'; "
                                      "`id` selects shards by id."),
    dry_run: bool = DryRun("Count and list"),
    spark_master: str = SparkMaster(DEFAULT_MASTER),
    output: Format = OutputFormat(Format.table),
    file_root: str | None = FileRoot,
    file_only: bool = FileOnly,
    consumer: str | None = ConsumerAddress,
    broker: str | None = BrokerAddress,
    timeout: str = Timeout,
) -> None:
    """Delete recovery-log fragments outside every hinted segment of the selected shards.

    Every selected shard must have primary hints and hints in each backup slot, else
    its recovery log is skipped (the summary says why); suspended logs are skipped
    too. A fragment is kept when it overlaps a live segment of any hint set (the last
    one of each set reaching to the write head), in whichever log the segment is:
    when logs were forked, select EVERY shard sharing their history, or live data of
    an unselected one may go. An unpersisted fragment outside every segment aborts its
    log. Permission-denied deletes are counted, not fatal. Exit codes: 0 done, 1 error
    (a failed delete, an aborted log), 2 usage error, 3 the selector matched no shard.
    """
    sel = require_selector(selector, example="id=shard-000")
    address = broker_address(broker)
    root, _ = resolve_file_root(file_root, address)

    async def collect(clients: Clients) -> Gathered:
        return await gather(clients.shards, clients.brokers(), sel, selector)

    try:
        gathered = run_shards(consumer, collect, timeout, broker=broker, with_broker=True)
    except NothingMatched as exc:
        raise NoMatchError(str(exc)) from None
    for log, reason in sorted(gathered.skipped.items()):
        logs.note(f"skipped recovery log {log}: {reason}")
    with activity(f"Pruning {len(gathered.tasks)} recovery logs on {spark_master}"):
        summary = prune_gathered(gathered, address, dry_run=dry_run, master=spark_master,
                                 file_root=root, file_only=file_only)
    for log, reason in sorted(summary.aborted.items()):
        logs.warn(f"nothing pruned from {log}: {reason}")
    for message in summary.errors:
        logs.warn(message)
    _render(summary, output)
    if summary.failed or summary.aborted:
        raise GazetteError(f"{summary.failed} fragment deletes failed and {len(summary.aborted)} "
                           "logs were aborted (see the warnings above)")


def _render(summary: ShardsPruneSummary, output: Format) -> None:
    if output is Format.json:
        for record in summary.audits:
            line = {"audit": "fragment"} | {k: v for k, v in record.items() if k != "kind"}
            sys.stdout.write(json.dumps(line, separators=(",", ":")) + "\n")
        sys.stdout.write(json.dumps(summary.as_dict(), separators=(",", ":")) + "\n")
        return
    if summary.dry_run:
        for a in summary.audits:
            stderr.print(f"would delete {a['fragment']} ({humanize_bytes(a['bytes'])})",
                         highlight=False, markup=False)
        stderr.print("dry run: nothing was deleted", highlight=False)
    s = summary
    counts_table([["Shards", str(s.shards), ""],
                  ["Recovery logs", str(s.logs), ""],
                  ["Skipped logs", str(s.logs_skipped), ""],
                  ["Aborted logs", str(s.logs_aborted), ""]], s)
