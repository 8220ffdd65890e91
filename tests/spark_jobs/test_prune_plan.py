"""The prune job's pure parts: what expires, how outcomes fold into a summary, executor deletes."""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.durations_ext import from_nanos
from gazette_core.broker.protocol.fragment_ext import content_path
from gazette_core.errors import GazetteError
from spark_jobs.fragment_deletes import DENIED, FAILED, GONE, PRUNED
from spark_jobs.job_errors import error_exit
from spark_jobs.prune import Plan, delete_partition, plan_prune, summarize
from spark_jobs.selection import (
    FileRootUnknown,
    NothingMatched,
    Selection,
    check_file_root,
    fetch_selection,
)
from spark_jobs.session import is_loopback_master, session_conf

NOW = 1_800_000_000.0
HOUR = 3600 * 1_000_000_000


def spec(name: str, retention_ns: int | None) -> pb.JournalSpec:
    s = pb.JournalSpec(name=name)
    if retention_ns is not None:
        s.fragment.retention.CopyFrom(from_nanos(retention_ns))
    return s


def frag(journal: str, begin: int, end: int, mod_time: int, store: str = "file:///") -> pb.Fragment:
    return pb.Fragment(journal=journal, begin=begin, end=end, mod_time=mod_time,
                       backing_store=store if mod_time else "",
                       sum=pb.SHA1Sum(part1=begin + 1), compression_codec=pb.NONE)


def test_fragments_expire_once_their_age_reaches_the_retention() -> None:
    at_limit = frag("a/j", 0, 10, int(NOW) - 3600)
    just_younger = frag("a/j", 10, 30, int(NOW) - 3599)
    older = frag("a/j", 30, 60, int(NOW) - 7200)

    plan = plan_prune([(spec("a/j", HOUR), [at_limit, just_younger, older])], NOW)

    assert plan == Plan(expired=[at_limit, older], fragments=3, unpersisted=0, bytes_total=60)


@pytest.mark.parametrize("retention", [None, 0, -HOUR], ids=["unset", "zero", "negative"])
def test_retention_zero_or_less_keeps_fragments_forever(retention: int | None) -> None:
    ancient = frag("a/j", 0, 100, 1)

    plan = plan_prune([(spec("a/j", retention), [ancient])], NOW + 1e9)

    assert plan == Plan(expired=[], fragments=1, unpersisted=0, bytes_total=100)


def test_unpersisted_fragments_are_counted_but_never_expire() -> None:
    spooled = frag("a/j", 0, 100, 0)
    no_store = pb.Fragment(journal="a/j", begin=100, end=150, mod_time=1)

    plan = plan_prune([(spec("a/j", 1), [spooled, no_store])], NOW)

    assert plan == Plan(expired=[], fragments=2, unpersisted=2, bytes_total=150)


def test_retention_is_per_journal() -> None:
    old = int(NOW) - 2 * 3600
    short = [frag("a/short", 0, 5, old)]
    long = [frag("a/long", 0, 7, old)]

    plan = plan_prune([(spec("a/short", HOUR), short), (spec("a/long", 24 * HOUR), long)], NOW)

    assert plan.expired == short
    assert (plan.fragments, plan.bytes_total) == (2, 12)


def test_summary_folds_outcomes_and_counts_missing_fragments_apart() -> None:
    selection = Selection(journals=[(spec("a/j", HOUR), [])], suspended=["a/off"])
    plan = Plan(expired=[], fragments=6, unpersisted=1, bytes_total=1000)
    outcomes = [(PRUNED, "a/j", 100, ""), (GONE, "a/j", 50, ""),
                (DENIED, "a/j", 200, "no: denied"), (FAILED, "a/j", 10, "disk on fire")]

    summary = summarize(selection, plan, outcomes, dry_run=False)

    # In the order the JSON line has always had its keys.
    assert list(summary.as_dict().items()) == list({
        "journals": 1, "journals_skipped": 1, "fragments": 6, "fragments_unpersisted": 1,
        "fragments_pruned": 1, "already_gone": 1, "fragments_kept": 4, "permission_denied": 1,
        "failed": 1, "bytes_total": 1000, "bytes_pruned": 100, "bytes_already_gone": 50,
        "bytes_kept": 850, "dry_run": False,
        "skipped_journals": ["a/off"], "errors": ["disk on fire", "no: denied"]}.items())


def test_dry_run_summary_counts_what_would_be_pruned() -> None:
    expired = [frag("a/j", 0, 10, 1), frag("a/j", 10, 25, 1)]
    plan = Plan(expired=expired, fragments=3, unpersisted=0, bytes_total=40)

    summary = summarize(Selection(journals=[(spec("a/j", 1), [])]), plan, [], dry_run=True)

    assert (summary.fragments_pruned, summary.bytes_pruned, summary.fragments_kept,
            summary.bytes_kept, summary.dry_run) == (2, 25, 1, 15, True)


@contextmanager
def undeletable(directory: Path) -> Iterator[None]:
    """Make entries of `directory` impossible to remove, for root (immutable) or not (mode)."""
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(directory)], check=True)
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(directory)], check=True)
    else:
        mode = directory.stat().st_mode
        directory.chmod(stat.S_IRUSR | stat.S_IXUSR)
        try:
            yield
        finally:
            directory.chmod(mode)


def stored(root: Path, f: pb.Fragment) -> Path:
    path = root / content_path(f)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * (f.end - f.begin))
    return path


def test_executor_deletes_report_one_outcome_per_fragment(tmp_path: Path) -> None:
    free, locked = frag("free/j", 0, 10, 5), frag("locked/j", 0, 20, 5)
    free_path, locked_path = stored(tmp_path, free), stored(tmp_path, locked)
    missing = frag("free/j", 10, 40, 5)

    with undeletable(locked_path.parent):
        outcomes = list(delete_partition(str(tmp_path), [
            f.SerializeToString() for f in (free, locked, missing)]))

    assert [o[:3] for o in outcomes] == [(PRUNED, "free/j", 10), (DENIED, "locked/j", 20),
                                         (GONE, "free/j", 30)]
    code = 1 if os.geteuid() == 0 else 13  # EPERM (immutable) or EACCES (mode)
    assert outcomes[1][3] == (f"file store 'file:///': delete {locked_path}: "
                              f"[Errno {code}] {os.strerror(code)}: '{locked_path}'")
    assert (free_path.exists(), locked_path.exists()) == (False, True)
    assert list(delete_partition(str(tmp_path), [])) == []


def test_other_delete_errors_are_failures() -> None:
    unusable = frag("a/j", 0, 10, 5, store="nosuch://bucket/")

    outcomes = list(delete_partition("/nonexistent", [unusable.SerializeToString()]))

    assert outcomes == [(FAILED, "a/j", 10, "fragment store 'nosuch://bucket/' is unusable: "
                                            "no fragment store adapter for scheme 'nosuch'")]


def test_file_only_deletes_any_stores_fragments_under_the_file_root(tmp_path: Path) -> None:
    # As a --broker.file-only broker persisted it: file:/// under its root, whatever the URL.
    f = frag("a/j", 0, 10, 5, store="s3://bucket/prefix/")
    path = stored(tmp_path, f)

    outcomes = list(delete_partition(str(tmp_path), [f.SerializeToString()], file_only=True))

    assert (outcomes, path.exists()) == ([(PRUNED, "a/j", 10, "")], False)


def test_file_stores_need_a_file_root(tmp_path: Path) -> None:
    on_file, on_s3 = frag("a/j", 0, 10, 5), frag("a/k", 0, 10, 5, store="s3://bucket/")

    check_file_root([on_s3], None, file_only=False)  # S3 alone needs none
    check_file_root([on_file, on_s3], str(tmp_path), file_only=False)
    for expired, file_only in (([on_s3, on_file], False), ([on_s3], True)):
        with pytest.raises(FileRootUnknown, match=r"journal a/[jk] keeps fragments in"):
            check_file_root(expired, None, file_only)
    # Executors refuse too, rather than resolve a store against their working directory.
    assert list(delete_partition("", [on_file.SerializeToString()])) == [
        (FAILED, "a/j", 10, "file:///: no file root to resolve it under")]


@pytest.mark.parametrize(("master", "loopback"), [
    ("local[*]", True), ("local", True), ("local[2]", True), ("spark://127.0.0.1:7077", True),
    ("spark://localhost:7077", True), ("spark://10.0.0.5:7077", False),
    ("spark://spark-master:7077", False),
])
def test_loopback_masters_bind_the_driver_to_loopback(master: str, loopback: bool) -> None:
    conf = session_conf(master, "t")

    assert is_loopback_master(master) is loopback
    assert conf.get("spark.driver.host") == ("127.0.0.1" if loopback else None)
    assert conf.get("spark.ui.enabled") == "false"
    assert conf.get("spark.master") == master


def test_a_jobs_main_exits_3_when_nothing_matched_else_1_saying_why_on_stderr(
        capsys: pytest.CaptureFixture[str]) -> None:
    codes = error_exit(NothingMatched("no journals match 'a=b'")), error_exit(GazetteError("down"))

    assert (codes, capsys.readouterr().err) == (
        (3, 1), "error: no journals match 'a=b'\nerror: down\n")


class Unassigned:
    """A broker's answers for `new`, which no broker serves yet, and `old`, which one does."""

    async def List(self, req: pb.ListRequest,
                   timeout: float) -> AsyncIterator[pb.ListResponse]:
        yield pb.ListResponse(journals=[pb.ListResponse.Journal(spec=pb.JournalSpec(name=n))
                                        for n in ("a/new", "a/old")])

    async def ListFragments(self, req: pb.FragmentsRequest,
                            timeout: float) -> pb.FragmentsResponse:
        if req.journal == "a/new":
            return pb.FragmentsResponse(status=pb.INSUFFICIENT_JOURNAL_BROKERS)
        return pb.FragmentsResponse(fragments=[pb.FragmentsResponse._Fragment(
            spec=pb.Fragment(journal=req.journal, begin=0, end=5))])


def test_a_journal_no_broker_serves_yet_fails_a_listing_unless_it_is_set_aside() -> None:
    stub, selector = Unassigned(), pb.LabelSelector()

    with pytest.raises(GazetteError, match=r"INSUFFICIENT_JOURNAL_BROKERS \(journal 'a/new'\)"):
        asyncio.run(fetch_selection(stub, selector, "a"))  # type: ignore[arg-type]
    kept = asyncio.run(fetch_selection(stub, selector, "a",  # type: ignore[arg-type]
                                       skip_unassigned=True))
    assert kept.unassigned == ["a/new"]
    assert [(spec.name, [f.end for f in fragments]) for spec, fragments in kept.journals] == [
        ("a/old", [5])]
