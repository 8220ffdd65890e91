"""`gazctl journals prune` against a real stack, deleting on Spark local mode and on a real
standalone master and worker (and the same job through `spark-submit`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import spark_jobs.prune
from gazette_core.broker.client.journals import list_fragments
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.local.stack import Stack
from gazette_core.testing.etcd import free_port
from spark_jobs.session import stop_session
from tests.gazctl.support import cli, gazctl, isolated_env, ok, wait_primaries, with_broker
from tests.spark_jobs.cluster_support import Cluster, cluster  # noqa: F401 (a fixture)
from tests.spark_jobs.test_prune_plan import undeletable

ROOT = Path(__file__).resolve().parents[2]
HOURS = 3600.0
APPENDS = [bytes([ord("a") + n]) * 800 for n in range(4)]
# Four 800-byte appends over 1 KiB fragments: two persisted fragments
# (0-800, 800-2400) and one still in the spool (2400-3200).
PERSISTED = [(0, 800), (800, 2400)]


def tree(prefix: str, children: str, refresh: str = "1s") -> str:
    return f"""\
name: {prefix}/
replication: 1
labels:
  - name: suite
    value: {prefix}
fragment:
  length: 1024
  compression_codec: NONE
  stores:
    - file:///
  refresh_interval: {refresh}
children:
{children}"""


def child(prefix: str, name: str, retention: str | None = None, suspended: bool = False) -> str:
    text = f"  - name: {prefix}/{name}\n    revision: 0\n"
    if retention is not None:
        text += f"    fragment:\n      retention: {retention}\n"
    if suspended:
        text += "    suspend:\n      level: FULL\n"
    return text


def _fragments(address: str, journal: str) -> list[pb.FragmentsResponse._Fragment]:
    return with_broker(address, lambda stub: list_fragments(
        stub, pb.FragmentsRequest(journal=journal)))


def populate(address: str, prefix: str, children: list[str], appended: list[str],
             refresh: str = "1s") -> None:
    """Apply the tree and roll `appended` journals into two persisted fragments each.

    `refresh` is the journals' fragment refresh_interval (how long a broker's
    index may list fragments a prune deleted).
    """
    specs = tree(prefix, "".join(sorted(children)), refresh)
    ok("journals", "apply", "--broker.address", address, input=specs)
    for name in appended:
        wait_primaries(address, f"name={prefix}/{name}")
        for data in APPENDS:
            ok("journals", "append", "-l", f"name={prefix}/{name}", "--broker.address", address,
               input=data)
    deadline = time.monotonic() + 30
    for name in appended:
        while True:
            frags = _fragments(address, f"{prefix}/{name}")
            if [(f.spec.begin, f.spec.end) for f in frags if f.spec.mod_time] == PERSISTED:
                break
            assert time.monotonic() < deadline, f"not persisted: {frags}"
            time.sleep(0.1)


def files(stack: Stack, journal: str) -> list[tuple[int, int]]:
    """(begin, end) of each fragment file of `journal` in the stack's file store."""
    directory = stack.directory / "fragments" / journal
    return sorted((int(p.name[:16], 16), int(p.name[17:33], 16)) for p in directory.iterdir())


@pytest.fixture(autouse=True)
def two_hours_later(monkeypatch: pytest.MonkeyPatch) -> float:
    """Prune judges retention two hours from now: fresh fragments are two hours old."""
    later = time.time() + 2 * HOURS
    monkeypatch.setattr(spark_jobs.prune, "clock", lambda: later)
    return later


@pytest.fixture(scope="module", autouse=True)
def one_spark_session() -> Iterator[None]:
    """Tests reuse the process's Spark session; stop it with the module."""
    yield
    stop_session()


def prune(address: str, stack: Stack, *args: str) -> dict[str, object]:
    result = ok("journals", "prune", "--format", "json", "--broker.address", address,
                "--file-root", str(stack.directory / "fragments"), *args)
    summary: dict[str, object] = json.loads(result.stdout)
    return summary


def summary(**values: object) -> dict[str, object]:
    base: dict[str, object] = {
        "journals": 0, "journals_skipped": 0, "fragments": 0, "fragments_unpersisted": 0,
        "fragments_pruned": 0, "already_gone": 0, "fragments_kept": 0, "permission_denied": 0,
        "failed": 0, "bytes_total": 0, "bytes_pruned": 0, "bytes_already_gone": 0,
        "bytes_kept": 0, "dry_run": False,
        "skipped_journals": [], "errors": []}
    return base | values


def test_prune_deletes_expired_fragments_on_local_spark(address: str, stack: Stack) -> None:
    p = "prune-local"
    populate(address, p, [child(p, "hourly", "1h"), child(p, "daily", "24h"),
                          child(p, "forever", "0s"), child(p, "unset"),
                          child(p, "paused", "1h", suspended=True)],
             ["hourly", "daily", "forever", "unset"])

    result = ok("journals", "prune", "-l", f"suite={p}", "--format", "json",
                "--broker.address", address, "--file-root", str(stack.directory / "fragments"))

    assert json.loads(result.stdout) == summary(
        journals=4, journals_skipped=1, fragments=12, fragments_unpersisted=4,
        fragments_pruned=2, fragments_kept=10, bytes_total=12800, bytes_pruned=2400,
        bytes_kept=10400, skipped_journals=[f"{p}/paused"])
    assert result.stderr == f"note: skipped suspended journal {p}/paused\n"
    assert files(stack, f"{p}/hourly") == []
    for name in ("daily", "forever", "unset"):
        assert files(stack, f"{p}/{name}") == PERSISTED


def test_dry_run_deletes_nothing_and_prints_a_table(address: str, stack: Stack) -> None:
    p = "prune-dry"
    populate(address, p, [child(p, "hourly", "1h"), child(p, "daily", "24h")],
             ["hourly", "daily"])

    result = ok("journals", "prune", "-l", f"suite={p}", "--dry-run", "--broker.address",
                address, "--file-root", str(stack.directory / "fragments"))

    assert [line.split() for line in result.stdout.splitlines()] == [
        ["Count", "Bytes"],
        ["Journals", "2"],
        ["Skipped", "(suspended)", "0"],
        ["Fragments", "6", "6.2", "KiB"],
        ["Pruned", "2", "2.3", "KiB"],
        ["Already", "gone", "0", "0", "B"],
        ["Kept", "4", "3.9", "KiB"],
        ["Permission", "denied", "0"],
        ["Failed", "0"]]
    assert result.stderr == "dry run: nothing was deleted\n"
    for name in ("hourly", "daily"):
        assert files(stack, f"{p}/{name}") == PERSISTED


def test_permission_denied_deletes_are_counted_not_fatal(address: str, stack: Stack) -> None:
    p = "prune-denied"
    populate(address, p, [child(p, "locked", "1h"), child(p, "open", "1h")],
             ["locked", "open"])

    locked = stack.directory / "fragments" / p / "locked"
    with undeletable(locked):
        got = prune(address, stack, "-l", f"suite={p}")

    code = 1 if os.geteuid() == 0 else 13  # EPERM (immutable) or EACCES (mode)
    errors = [f"file store 'file:///': delete {path}: [Errno {code}] {os.strerror(code)}: "
              f"'{path}'" for path in sorted(locked.iterdir())]
    assert got == summary(journals=2, fragments=6, fragments_unpersisted=2, fragments_pruned=2,
                          fragments_kept=4, permission_denied=2, bytes_total=6400,
                          bytes_pruned=2400, bytes_kept=4000, errors=errors)
    assert files(stack, f"{p}/locked") == PERSISTED
    assert files(stack, f"{p}/open") == []


def test_help_names_every_flag_and_exits_0() -> None:
    result = cli("journals", "prune", "--help")

    assert result.exit_code == 0
    for flag in ("--selector", "-l", "--dry-run", "--spark-master", "--format", "--file-root",
                 "--file-only", "--broker.address"):
        assert flag in result.stdout


def test_missing_selector_is_a_usage_error() -> None:
    result = cli("journals", "prune", "--broker.address", "http://127.0.0.1:1")

    assert result.exit_code == 2
    assert "Missing option '-l' / '--selector'" in result.stderr


def test_selector_matching_nothing_exits_3(address: str, state_home: Path) -> None:
    proc = gazctl("journals", "prune", "-l", "suite=no-such-thing", "--broker.address", address,
                  env=isolated_env(state_home))

    assert proc.returncode == 3
    assert proc.stdout == b""
    assert proc.stderr.decode() == ("error: no journals match "
                                    "'suite=no-such-thing'\n")


def test_unreachable_broker_fails_fast(state_home: Path) -> None:
    closed = f"http://127.0.0.1:{free_port()}"

    proc = gazctl("journals", "prune", "-l", "app=x", "--broker.address", closed,
                  env=isolated_env(state_home), timeout=20)

    assert proc.returncode == 1
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: cannot reach broker at {closed}: List: UNAVAILABLE: ")
    assert lines[0].endswith(
        "(start one with `gazctl local up`, set --broker.address, or raise --timeout)")


def test_prune_runs_on_a_standalone_cluster(
        address: str, stack: Stack, cluster: Cluster) -> None:  # noqa: F811
    p = "prune-cluster"
    populate(address, p, [child(p, "hourly", "1h"), child(p, "daily", "24h")],
             ["hourly", "daily"])

    got = prune(address, stack, "-l", f"suite={p}", "--spark-master", cluster.master)

    assert got == summary(journals=2, fragments=6, fragments_unpersisted=2, fragments_pruned=2,
                          fragments_kept=4, bytes_total=6400, bytes_pruned=2400,
                          bytes_kept=4000)
    assert files(stack, f"{p}/hourly") == []
    assert files(stack, f"{p}/daily") == PERSISTED


def test_the_job_runs_through_spark_submit(address: str, stack: Stack, cluster: Cluster,  # noqa: F811
                                           two_hours_later: float) -> None:
    p = "prune-submit"
    populate(address, p, [child(p, "hourly", "1h")], ["hourly"])
    stop_session()  # This process's application would hold the worker's cores.
    env = {**os.environ, "SPARK_HOME": str(cluster.spark_home), "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_PYTHON": sys.executable}

    proc = subprocess.run(
        [str(cluster.spark_home / "bin" / "spark-submit"), "--master", cluster.master,
         str(ROOT / "spark_jobs" / "prune.py"), "--broker.address", address,
         "-l", f"suite={p}", "--spark-master", cluster.master,
         "--file-root", str(stack.directory / "fragments"), "--now", str(two_hours_later)],
        env=env, capture_output=True, timeout=90, check=False)

    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    assert json.loads(proc.stdout) == summary(
        journals=1, fragments=3, fragments_unpersisted=1, fragments_pruned=2, fragments_kept=1,
        bytes_total=3200, bytes_pruned=2400, bytes_kept=800)
    assert files(stack, f"{p}/hourly") == []
