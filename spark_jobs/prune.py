"""Journal fragment retention: delete persisted fragments older than their journal's retention.

The driver lists the selected journals and their fragments through a broker
(`fetch_selection`) and decides what has expired (`plan_prune`, a pure
function). Executors then delete the expired fragments from their stores in
parallel (`delete_partition`), each answering one outcome per fragment, and
the driver folds those into a `PruneSummary`.

Rules:
- A fragment is expired when `now - mod_time >= spec.fragment.retention`.
  A retention of zero (or less) keeps fragments forever.
- Fragments without a backing store or mod_time (not yet persisted) are kept.
- Suspended journals are skipped: their fragments are not listed at all.
- Bytes are logical content bytes (`end - begin`), not stored (compressed) bytes.
- A delete refused for lack of permission is counted, not fatal; a fragment
  the store no longer has counts as `already_gone`, never as pruned (a run
  where every delete found nothing is warned about: most likely the file root
  is not the brokers'); any other failed delete is counted as failed.
- `file://` stores (every store, with `file_only`, as `--broker.file-only` does
  on brokers) resolve under `file_root`, which must then be given: there is no
  default, so a guess never deletes another cluster's files.
- With `dry_run`, everything is counted the same and nothing is deleted
  (no Spark session is started: there is nothing to hand to executors).

Run it through `gazctl journals prune`, or as a Spark application:
`spark-submit spark_jobs/prune.py --broker.address URL -l SELECTOR`.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from gazette_core.broker.client.journals import DEFAULT_TIMEOUT
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.durations_ext import to_nanos
from gazette_core.errors import GazetteError
from spark_jobs.fragment_deletes import DeleteTally, Outcome, delete_fragment
from spark_jobs.job_errors import error_exit
from spark_jobs.selection import (
    FILE_ONLY_ENV,
    FILE_ROOT_ENV,
    TRUE,
    Selection,
    check_file_root,
    list_selection,
    uses_file_root,
)
from spark_jobs.session import DEFAULT_MASTER, get_session

NANOS = 1_000_000_000
# Deletes in flight at once within one executor partition.
PARTITION_CONCURRENCY = 8

clock: Callable[[], float] = time.time
"""The wall clock a run without an explicit `now` judges retention by."""


@dataclass
class Plan:
    """The expired fragments to delete, and the totals of what was examined."""

    expired: list[pb.Fragment] = field(default_factory=list)
    fragments: int = 0
    unpersisted: int = 0
    bytes_total: int = 0


@dataclass
class PruneSummary(DeleteTally):
    """Counters of one prune run; `as_dict` is the JSON shape gazctl prints."""

    journals: int = 0
    journals_skipped: int = 0
    fragments_unpersisted: int = 0
    skipped_journals: list[str] = field(default_factory=list)
    # For stderr only (not in the JSON): e.g. that no delete found anything.
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return self.fields(SUMMARY_FIELDS)


SUMMARY_FIELDS = (
    "journals", "journals_skipped", "fragments", "fragments_unpersisted", "fragments_pruned",
    "already_gone", "fragments_kept", "permission_denied", "failed", "bytes_total",
    "bytes_pruned", "bytes_already_gone", "bytes_kept", "dry_run", "skipped_journals", "errors")


def retention_nanos(spec: pb.JournalSpec) -> int:
    """The journal's fragment retention in nanoseconds; zero or less keeps forever."""
    return to_nanos(spec.fragment.retention) if spec.fragment.HasField("retention") else 0


def is_expired(fragment: pb.Fragment, retention_ns: int, now: float) -> bool:
    if retention_ns <= 0 or not fragment.backing_store or not fragment.mod_time:
        return False
    return int(now * NANOS) - fragment.mod_time * NANOS >= retention_ns


def plan_prune(journals: Iterable[tuple[pb.JournalSpec, Sequence[pb.Fragment]]],
               now: float) -> Plan:
    """Which fragments of `journals` have outlived their journal's retention at `now`."""
    plan = Plan()
    for spec, fragments in journals:
        retention = retention_nanos(spec)
        for f in fragments:
            plan.fragments += 1
            plan.bytes_total += f.end - f.begin
            if not f.backing_store or not f.mod_time:
                plan.unpersisted += 1
            elif is_expired(f, retention, now):
                plan.expired.append(f)
    return plan


def delete_partition(file_root: str, items: Iterable[bytes], file_only: bool = False
                     ) -> Iterator[Outcome]:
    """Delete one partition's fragments (serialized `Fragment`s); one outcome per fragment.

    Runs on executors: stores are built there from each fragment's backing
    store URL, with `file_root` rooting `file://` URLs (all URLs, with `file_only`).
    """
    fragments = [pb.Fragment.FromString(item) for item in items]
    if not fragments:
        return iter(())
    return iter(asyncio.run(_delete_all(fragments, file_root, file_only)))


async def _delete_all(fragments: list[pb.Fragment], file_root: str, file_only: bool
                      ) -> list[Outcome]:
    gate = asyncio.Semaphore(PARTITION_CONCURRENCY)

    async def one(f: pb.Fragment) -> Outcome:
        async with gate:
            return await delete_fragment(f, file_root, file_only)

    return await asyncio.gather(*(one(f) for f in fragments))


def delete_on_spark(expired: Sequence[pb.Fragment], master: str, file_root: str,
                    file_only: bool = False) -> list[Outcome]:
    """Spread the deletes of `expired` over the executors of `master` and collect outcomes."""
    if not expired:
        return []
    sc = get_session(master, app_name="gazette-journals-prune").sparkContext
    slices = max(1, min(len(expired), sc.defaultParallelism * 2))
    rdd = sc.parallelize([f.SerializeToString() for f in expired], slices)
    outcomes: list[Outcome] = rdd.mapPartitions(
        functools.partial(delete_partition, file_root, file_only=file_only)).collect()
    return outcomes


def summarize(selection: Selection, plan: Plan, outcomes: Sequence[Outcome],
              dry_run: bool) -> PruneSummary:
    """Fold the plan and the executors' outcomes into the run's counters."""
    s = PruneSummary(journals=len(selection.journals), journals_skipped=len(selection.suspended),
                     fragments=plan.fragments, fragments_unpersisted=plan.unpersisted,
                     bytes_total=plan.bytes_total, dry_run=dry_run,
                     skipped_journals=list(selection.suspended))
    if dry_run:
        s.fragments_pruned = len(plan.expired)
        s.bytes_pruned = sum(f.end - f.begin for f in plan.expired)
    for outcome, _, size, message in outcomes:
        s.count(outcome, size, message)
    s.settle()
    return s


def nothing_found(deletes: int, file_root: str | None) -> str:
    """The warning of a run none of whose `deletes` found its fragment."""
    text = f"none of the {deletes} expired fragments was found in its store"
    if file_root is None:
        return f"{text}: were they deleted already?"
    return (f"{text}: is {file_root} the brokers' --broker.file-root? (else they were "
            "deleted already)")


def prune_selection(selection: Selection, *, now: float | None = None, dry_run: bool = False,
                    master: str = DEFAULT_MASTER, file_root: str | None = None,
                    file_only: bool = False,
                    while_deleting: Callable[[int], AbstractContextManager[object]] | None = None,
                    ) -> PruneSummary:
    """Plan against `now` (default: the current time), delete on Spark unless `dry_run`.

    `file_root` (None: unknown) roots `file://` stores, and every store with
    `file_only`; it is required once such a store holds an expired fragment,
    in a dry run too. `while_deleting(n)`, if given, is entered around the
    deletes of the `n` expired fragments (Spark start-up included), e.g. to
    show a spinner meanwhile.
    """
    plan = plan_prune(selection.journals, clock() if now is None else now)
    check_file_root(plan.expired, file_root, file_only)
    outcomes: list[Outcome] = []
    if not dry_run:
        with (while_deleting or nullcontext)(len(plan.expired)):
            outcomes = delete_on_spark(plan.expired, master, file_root or "", file_only)
    summary = summarize(selection, plan, outcomes, dry_run)
    if outcomes and summary.already_gone == len(outcomes):
        rooted = any(uses_file_root(f.backing_store, file_only) for f in plan.expired)
        summary.warnings.append(nothing_found(len(outcomes), file_root if rooted else None))
    return summary


def run_prune(address: str, selector: str, *, now: float | None = None, dry_run: bool = False,
              master: str = DEFAULT_MASTER, file_root: str | None = None,
              file_only: bool = False, timeout: float = DEFAULT_TIMEOUT) -> PruneSummary:
    """List through the broker at `address`, then prune; the whole job in one call."""
    selection = list_selection(address, selector, timeout)
    return prune_selection(selection, now=now, dry_run=dry_run, master=master,
                           file_root=file_root, file_only=file_only)


def main(argv: list[str] | None = None) -> int:
    """`spark-submit spark_jobs/prune.py` entry: prints the summary as one JSON line.

    Exit codes: 0 done, 1 error or failed deletes, 2 usage, 3 selector matched nothing.
    """
    parser = argparse.ArgumentParser(prog="prune.py", description=__doc__.split("\n")[0])
    parser.add_argument("--broker.address", dest="address", required=True)
    parser.add_argument("-l", "--selector", required=True)
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--spark-master", default=DEFAULT_MASTER)
    parser.add_argument("--file-root", default=os.environ.get(FILE_ROOT_ENV) or None,
                        help="The brokers' --broker.file-root, rooting file:// fragment "
                             f"stores [${FILE_ROOT_ENV}] (no default).")
    parser.add_argument("--file-only", action="store_true",
                        default=os.environ.get(FILE_ONLY_ENV, "").lower() in TRUE,
                        help="Every store is file:/// under --file-root, as with the "
                             f"brokers' --broker.file-only [${FILE_ONLY_ENV}].")
    parser.add_argument("--now", type=float, default=None,
                        help="Judge retention as of this unix time (default: now).")
    args = parser.parse_args(argv)
    try:
        summary = run_prune(args.address, args.selector, now=args.now, dry_run=args.dry_run,
                            master=args.spark_master, file_root=args.file_root,
                            file_only=args.file_only)
    except GazetteError as exc:
        return error_exit(exc)
    for name in summary.skipped_journals:
        print(f"note: skipped suspended journal {name}", file=sys.stderr)
    for message in summary.warnings:
        print(f"warning: {message}", file=sys.stderr)
    print(json.dumps(summary.as_dict(), separators=(",", ":")))
    return 1 if summary.failed else 0


if __name__ == "__main__":
    # Under spark-submit this file is __main__; run the importable module instead so
    # executors unpickle its functions by reference.
    from spark_jobs import prune as _job

    sys.exit(_job.main())
