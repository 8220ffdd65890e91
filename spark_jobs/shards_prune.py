"""Recovery-log garbage collection: delete fragments no stored hint set can need.

The driver lists the selected shards through a consumer and gathers each
one's primary and backup hints (`gather_hints`), folds them into live
segments per recovery log (`shards_prune_plan.plan_segments`, pure) and
looks up each log's spec through a broker: a missing or suspended log, or
one with a store the broker finds unhealthy (FragmentStoreHealth, without
the delete probe), is skipped and the summary says why. Executors then take one log each: they
list its fragments through the broker, classify them against the log's
segments (`shards_prune_plan.plan_log`, pure) and delete the prunable ones
from their stores (`prune_partition`), answering a record per log and per
deleted fragment that the driver folds into a `ShardsPruneSummary`.

Permission-denied deletes are counted, not fatal; a fragment already gone
from its store is counted apart; other failed deletes fail the run, as does
an aborted log (an unpersisted fragment outside every segment). A dry run
lists and classifies on executors too and reports would-be deletions.

Run it through `gazctl shards prune`, or as a Spark application:
`spark-submit spark_jobs/shards_prune.py --consumer.address URL --broker.address URL -l SEL`.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc

from gazette_core.broker.client.channel import close_channels, journal_stub
from gazette_core.broker.client.journals import DEFAULT_TIMEOUT, list_fragments, list_journals
from gazette_core.broker.client.rpc_errors import from_rpc_error
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.fragment_ext import content_path
from gazette_core.broker.protocol.labels_ext import parse_selector
from gazette_core.consumer.api.client import get_hints, list_shards
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol.shard_spec_ext import recovery_log
from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.errors import GazetteError, ValidationError
from spark_jobs.fragment_deletes import WOULD_PRUNE, DeleteTally, delete_fragment
from spark_jobs.job_errors import error_exit
from spark_jobs.selection import (
    FILE_ONLY_ENV,
    FILE_ROOT_ENV,
    TRUE,
    NothingMatched,
    is_suspended,
    uses_file_root,
)
from spark_jobs.session import DEFAULT_MASTER, get_session
from spark_jobs.shards_prune_plan import LogPlan, ShardHints, plan_log, plan_segments

# Deletes in flight at once for one log (as Go's shards prune).
LOG_CONCURRENCY = 32
Record = dict[str, Any]


@dataclass
class ShardsPruneSummary(DeleteTally):
    """Counters of one run; `as_dict` is its JSON shape, `audits` one record per deletion."""

    shards: int = 0
    logs: int = 0
    logs_skipped: int = 0
    logs_aborted: int = 0
    skipped: dict[str, str] = field(default_factory=dict)
    aborted: dict[str, str] = field(default_factory=dict)
    audits: list[Record] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out = self.fields(SUMMARY_FIELDS)
        out["skipped"] = [{"log": k, "reason": v} for k, v in sorted(self.skipped.items())]
        out["aborted"] = [{"log": k, "reason": v} for k, v in sorted(self.aborted.items())]
        return out


SUMMARY_FIELDS = (
    "shards", "logs", "logs_skipped", "logs_aborted", "fragments", "fragments_pruned",
    "fragments_kept", "already_gone", "permission_denied", "failed", "bytes_total",
    "bytes_pruned", "bytes_kept", "bytes_already_gone", "dry_run", "errors", "skipped",
    "aborted")


# --- driver: hints and log specs ---------------------------------------------------------

def slots_of(spec: cpb.ShardSpec, resp: cpb.GetHintsResponse) -> list[tuple[str, Any]]:
    """The shard's hint slots by name: primary, then backup.0 (newest) onwards."""
    def hints(entry: cpb.GetHintsResponse.ResponseHints) -> rpb.FSMHints | None:
        return entry.hints if entry.HasField("hints") else None

    slots = [("primary", hints(resp.primary_hints))]
    slots += [(f"backup.{i}", hints(b)) for i, b in enumerate(resp.backup_hints)]
    # A slot the consumer did not answer for counts as empty.
    slots += [(f"backup.{i}", None) for i in range(len(resp.backup_hints), spec.hint_backups)]
    return slots


async def gather_hints(consumer: Any, selector: pb.LabelSelector, text: str,
                       timeout: float = DEFAULT_TIMEOUT) -> list[ShardHints]:
    """Every shard `selector` matches, with all its hint slots, fetched concurrently."""
    listed = await list_shards(consumer, selector, timeout=timeout)
    if not listed.shards:
        raise NothingMatched(f"no shards match {text!r}")

    async def one(spec: cpb.ShardSpec) -> ShardHints:
        resp = await get_hints(consumer, spec.id, timeout=timeout)
        return ShardHints(spec.id, recovery_log(spec), slots_of(spec, resp))

    return list(await asyncio.gather(*(one(s.spec) for s in listed.shards)))


async def log_specs(broker: Any, logs: Iterable[str], timeout: float = DEFAULT_TIMEOUT
                    ) -> dict[str, pb.JournalSpec]:
    """The specs of those of `logs` that exist."""
    async def one(log: str) -> pb.JournalSpec | None:
        sel = pb.LabelSelector(include=pb.LabelSet(labels=[pb.Label(name="name", value=log)]))
        resp = await list_journals(broker, sel, timeout=timeout)
        return next((j.spec for j in resp.journals if j.spec.name == log), None)

    names = sorted(logs)
    found = await asyncio.gather(*(one(n) for n in names))
    return {n: s for n, s in zip(names, found, strict=True) if s is not None}


async def unhealthy_stores(broker: Any, stores: Iterable[str],
                           timeout: float = DEFAULT_TIMEOUT) -> dict[str, str]:
    """Why each of `stores` that the broker finds unhealthy is so (no delete probe)."""
    async def one(store: str) -> str:
        req = pb.FragmentStoreHealthRequest(fragment_store=store)
        try:
            resp = await broker.FragmentStoreHealth(req, timeout=timeout)
        except grpc.aio.AioRpcError as err:
            return f"checking store {store}: {from_rpc_error(err, 'FragmentStoreHealth')}"
        if resp.status == pb.OK:
            return ""
        detail = f": {resp.store_health_error}" if resp.store_health_error else ""
        return f"store {store} is not healthy ({pb.Status.Name(resp.status)}){detail}"

    names = sorted(set(stores))
    problems = await asyncio.gather(*(one(s) for s in names))
    return {s: p for s, p in zip(names, problems, strict=True) if p}


@dataclass
class Gathered:
    """What the driver hands to executors: the logs to prune with their segments."""

    shards: int
    tasks: dict[str, list[rpb.Segment]]
    skipped: dict[str, str]
    stores: dict[str, list[str]]


async def gather(consumer: Any, broker: Any, selector: pb.LabelSelector, text: str,
                 timeout: float = DEFAULT_TIMEOUT) -> Gathered:
    """Hints of the selected shards folded into per-log tasks; missing/suspended logs skipped."""
    plan = plan_segments(await gather_hints(consumer, selector, text, timeout))
    specs = await log_specs(broker, plan.segments, timeout)
    sick = await unhealthy_stores(broker, (store for spec in specs.values()
                                           for store in spec.fragment.stores), timeout)
    skipped = dict(plan.skipped)
    tasks: dict[str, list[rpb.Segment]] = {}
    for log, segments in sorted(plan.segments.items()):
        spec = specs.get(log)
        problems = [sick[s] for s in spec.fragment.stores if s in sick] if spec else []
        if spec is None:
            skipped[log] = "the journal does not exist"
        elif is_suspended(spec):
            skipped[log] = "the journal is suspended (its fragments are left as they are)"
        elif problems:
            skipped[log] = problems[0]
        else:
            tasks[log] = segments
    stores = {log: list(specs[log].fragment.stores) for log in tasks}
    return Gathered(plan.shards, tasks, skipped, stores)


def check_file_root(gathered: Gathered, file_root: str | None, file_only: bool) -> None:
    """Refuse to start when a log to prune keeps fragments under an unknown file root."""
    for log, stores in gathered.stores.items():
        if file_root is None and any(uses_file_root(s, file_only) for s in stores):
            raise ValidationError("--file-root", (
                f"recovery log {log} keeps fragments in {', '.join(stores)} but the brokers' "
                f"file root is unknown; pass their --broker.file-root as --file-root or "
                f"${FILE_ROOT_ENV}"))


# --- executors ---------------------------------------------------------------------------

def prune_partition(broker: str, file_root: str, file_only: bool, dry_run: bool,
                    items: Iterable[tuple[str, list[bytes]]]) -> Iterator[Record]:
    """Prune the logs of one partition: (log, serialized segments) each; records out."""
    tasks = [(log, [rpb.Segment.FromString(s) for s in segs]) for log, segs in items]
    if not tasks:
        return iter(())
    return iter(asyncio.run(_prune_logs(broker, tasks, file_root, file_only, dry_run)))


async def _prune_logs(broker: str, tasks: Sequence[tuple[str, list[rpb.Segment]]],
                      file_root: str, file_only: bool, dry_run: bool) -> list[Record]:
    out: list[Record] = []
    try:
        for log, segments in tasks:
            out.extend(await prune_log(broker, log, segments, file_root, file_only, dry_run))
    finally:
        await close_channels()
    return out


async def prune_log(broker: str, log: str, segments: Sequence[rpb.Segment], file_root: str,
                    file_only: bool, dry_run: bool) -> list[Record]:
    """List `log`'s fragments, classify them and delete (or, dry, report) the prunable."""
    try:
        listed = await list_fragments(journal_stub(broker), pb.FragmentsRequest(journal=log))
    except GazetteError as exc:
        return [{"kind": "log", "log": log, "error": f"listing fragments of {log}: {exc}"}]
    plan = plan_log(log, segments, [f.spec for f in listed])
    gate = asyncio.Semaphore(LOG_CONCURRENCY)

    async def one(frag: pb.Fragment) -> Record:
        if dry_run:
            return audit(frag, WOULD_PRUNE, "")
        async with gate:
            outcome, _, _, message = await delete_fragment(frag, file_root, file_only)
        return audit(frag, outcome, message)

    deleted = await asyncio.gather(*(one(f) for f in plan.prunable))
    return [log_record(plan), *deleted]


def log_record(plan: LogPlan) -> Record:
    return {"kind": "log", "log": plan.log, "fragments": plan.fragments,
            "bytes_total": plan.bytes_total, "aborted": plan.aborted}


def audit(frag: pb.Fragment, outcome: str, message: str) -> Record:
    """The audit line of one deletion (or would-be deletion)."""
    return {"kind": "fragment", "log": frag.journal, "fragment": content_path(frag),
            "store": frag.backing_store, "begin": frag.begin, "end": frag.end,
            "bytes": frag.end - frag.begin, "mod_time": frag.mod_time, "outcome": outcome,
            "message": message}


def run_on_spark(gathered: Gathered, broker: str, master: str, file_root: str,
                 file_only: bool, dry_run: bool) -> list[Record]:
    """One Spark task per log; every record collected back to the driver."""
    if not gathered.tasks:
        return []
    items = [(log, [s.SerializeToString() for s in segs]) for log, segs in gathered.tasks.items()]
    sc = get_session(master, app_name="gazette-shards-prune").sparkContext
    rdd = sc.parallelize(items, len(items))
    records: list[Record] = rdd.mapPartitions(functools.partial(
        prune_partition, broker, file_root, file_only, dry_run)).collect()
    return records


def summarize(gathered: Gathered, records: Sequence[Record], dry_run: bool
              ) -> ShardsPruneSummary:
    """Fold the executors' records into the run's counters."""
    s = ShardsPruneSummary(shards=gathered.shards, logs=len(gathered.tasks), dry_run=dry_run,
                           logs_skipped=len(gathered.skipped), skipped=dict(gathered.skipped))
    for r in records:
        if r["kind"] == "log":
            if r.get("error"):  # Not listed: nothing of the log was touched.
                s.aborted[r["log"]] = r["error"]
                continue
            s.fragments += r["fragments"]
            s.bytes_total += r["bytes_total"]
            if r["aborted"]:
                s.aborted[r["log"]] = r["aborted"]
            continue
        s.audits.append(r)
        s.count(r["outcome"], r["bytes"], r["message"])
    s.logs_aborted = len(s.aborted)
    s.settle()
    s.audits.sort(key=lambda a: (a["log"], a["begin"]))
    return s


def prune_gathered(gathered: Gathered, broker: str, *, dry_run: bool = False,
                   master: str = DEFAULT_MASTER, file_root: str | None = None,
                   file_only: bool = False) -> ShardsPruneSummary:
    """Run the executors over the gathered logs and summarize."""
    check_file_root(gathered, file_root, file_only)
    records = run_on_spark(gathered, broker, master, file_root or "", file_only, dry_run)
    return summarize(gathered, records, dry_run)


def run_prune(consumer: str, broker: str, selector: str, *, dry_run: bool = False,
              master: str = DEFAULT_MASTER, file_root: str | None = None,
              file_only: bool = False, timeout: float = DEFAULT_TIMEOUT) -> ShardsPruneSummary:
    """Gather through the consumer at `consumer` and the broker at `broker`, then prune."""
    if not selector.strip():
        raise ValidationError("--selector", "a selector is required, e.g. -l id=shard-000")
    sel = parse_selector(selector)

    async def fetch() -> Gathered:
        try:
            return await gather(consumer, journal_stub(broker), sel, selector, timeout)
        finally:
            await close_channels()

    return prune_gathered(asyncio.run(fetch()), broker, dry_run=dry_run, master=master,
                          file_root=file_root, file_only=file_only)


def main(argv: list[str] | None = None) -> int:
    """`spark-submit spark_jobs/shards_prune.py` entry: audit lines, then the summary line.

    Exit codes: 0 done, 1 error, failed deletes or an aborted log, 2 usage,
    3 selector matched nothing.
    """
    parser = argparse.ArgumentParser(prog="shards_prune.py", description=__doc__.split("\n")[0])
    parser.add_argument("--consumer.address", dest="consumer", required=True)
    parser.add_argument("--broker.address", dest="broker", required=True)
    parser.add_argument("-l", "--selector", required=True)
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--spark-master", default=DEFAULT_MASTER)
    parser.add_argument("--file-root", default=os.environ.get(FILE_ROOT_ENV) or None)
    parser.add_argument("--file-only", action="store_true",
                        default=os.environ.get(FILE_ONLY_ENV, "").lower() in TRUE)
    args = parser.parse_args(argv)
    try:
        summary = run_prune(args.consumer, args.broker, args.selector, dry_run=args.dry_run,
                            master=args.spark_master, file_root=args.file_root,
                            file_only=args.file_only)
    except GazetteError as exc:
        return error_exit(exc)
    for record in summary.audits:
        print(json.dumps(record, separators=(",", ":")))
    print(json.dumps(summary.as_dict(), separators=(",", ":")))
    return 1 if summary.failed or summary.aborted else 0


if __name__ == "__main__":
    # Under spark-submit this file is __main__; run the importable module instead so
    # executors unpickle its functions by reference.
    from spark_jobs import shards_prune as _job

    sys.exit(_job.main())
