"""`gazctl journals prune` finds the brokers' file root, or refuses; it never guesses one.

It must delete the files the brokers wrote: the root comes from --file-root,
$BROKER_FILE_ROOT (which `gazctl local env` exports), gazctl.ini or the local
stack the broker belongs to. Fragments a store no longer has are `already_gone`,
never pruned, and a run in which no delete found anything says so.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gazette_core.local import stack as local_stack
from gazette_core.local.stack import Stack
from tests.gazctl.support import cli, gazctl, isolated_env, ok
from tests.gazctl.test_journals_prune import (  # noqa: F401 (fixtures)
    PERSISTED,
    child,
    files,
    one_spark_session,
    populate,
    summary,
    two_hours_later,
)
from tests.gazctl.test_progress import env_for, in_terminal

ROW = re.compile(r"^(\S.*?)\s{2,}(\d+)(?:\s{2,}(\S.*\S))?\s*$")


@pytest.fixture(autouse=True)
def no_configured_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No $BROKER_FILE_ROOT and no gazctl.ini: the root is found only as each test says."""
    monkeypatch.delenv("BROKER_FILE_ROOT", raising=False)
    monkeypatch.delenv("BROKER_FILE_ONLY", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("GAZETTE_SPARK_LOG", str(tmp_path / "spark.log"))


def pruned(result_stdout: str) -> dict[str, object]:
    got: dict[str, object] = json.loads(result_stdout)
    return got


def test_file_stores_without_a_known_root_are_refused(address: str, stack: Stack,
                                                      state_home: Path, tmp_path: Path) -> None:
    p = "root-unknown"
    populate(address, p, [child(p, "old", "1ms")], ["old"])
    (local_stack.POINTER / "active-stack").unlink(missing_ok=True)  # no stack to ask
    env = isolated_env(state_home) | {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    env.pop("BROKER_FILE_ROOT", None)

    proc = gazctl("journals", "prune", "-l", f"suite={p}", "--broker.address", address, env=env)

    assert proc.returncode == 1, proc.stdout
    assert proc.stdout == b""
    assert proc.stderr.decode() == (
        f"error: invalid input: --file-root: journal {p}/old keeps fragments in file:/// but "
        "the brokers' file root is unknown; pass their --broker.file-root as --file-root or "
        "$BROKER_FILE_ROOT\n")
    assert files(stack, f"{p}/old") == PERSISTED


def test_a_file_root_that_is_no_directory_is_refused(address: str, stack: Stack,
                                                     tmp_path: Path) -> None:
    p = "root-missing"
    populate(address, p, [child(p, "old", "1h")], ["old"])

    result = cli("journals", "prune", "-l", f"suite={p}", "--dry-run",
                 "--broker.address", address, "--file-root", str(tmp_path / "nowhere"))

    assert result.exit_code == 1
    assert str(result.exception) == (f"--file-root: {str(tmp_path / 'nowhere')!r} is not a "
                                     "directory (it must be the brokers' --broker.file-root)")
    assert files(stack, f"{p}/old") == PERSISTED


def test_local_env_exports_the_root_prune_uses(address: str, stack: Stack,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    p = "root-env"
    populate(address, p, [child(p, "old", "1h")], ["old"])
    exports = ok("local", "env", "--dir", str(stack.directory)).stdout.splitlines()
    root = str(stack.directory / "fragments")
    assert f"export BROKER_FILE_ROOT={root}" in exports
    monkeypatch.setenv("BROKER_FILE_ROOT", root)

    result = ok("journals", "prune", "-l", f"suite={p}", "--format", "json",
                "--broker.address", address)

    assert pruned(result.stdout) == summary(
        journals=1, fragments=3, fragments_unpersisted=1, fragments_pruned=2, fragments_kept=1,
        bytes_total=3200, bytes_pruned=2400, bytes_kept=800)
    assert files(stack, f"{p}/old") == []


def test_the_active_local_stacks_root_is_used_for_its_brokers(address: str, stack: Stack) -> None:
    p = "root-active"
    populate(address, p, [child(p, "old", "1h")], ["old"])
    local_stack.up(stack.directory, timeout=30)  # everything runs: this only activates it

    result = ok("journals", "prune", "-l", f"suite={p}", "--format", "json")

    assert pruned(result.stdout)["fragments_pruned"] == 2
    assert files(stack, f"{p}/old") == []


def test_missing_files_are_already_gone_and_warned_about(address: str, stack: Stack,
                                                         tmp_path: Path) -> None:
    p = "root-wrong"
    populate(address, p, [child(p, "old", "1h")], ["old"])
    elsewhere = tmp_path / "other-root"
    elsewhere.mkdir()

    result = ok("journals", "prune", "-l", f"suite={p}", "--format", "json",
                "--broker.address", address, "--file-root", str(elsewhere))

    assert pruned(result.stdout) == summary(
        journals=1, fragments=3, fragments_unpersisted=1, already_gone=2, fragments_kept=1,
        bytes_total=3200, bytes_already_gone=2400, bytes_kept=800)
    assert result.stderr == (
        f"warning: none of the 2 expired fragments was found in its store: is {elsewhere} "
        "the brokers' --broker.file-root? (else they were deleted already)\n")
    assert files(stack, f"{p}/old") == PERSISTED


def test_the_summary_table_fits_an_80_column_terminal(address: str, stack: Stack,
                                                      state_home: Path) -> None:
    p = "root-table"
    populate(address, p, [child(p, "old", "1ms"), child(p, "kept", "0s")], ["old", "kept"])
    env = env_for(state_home) | {"COLUMNS": "80"}

    term = in_terminal("journals", "prune", "-l", f"suite={p}", "--dry-run",
                       "--broker.address", address,
                       "--file-root", str(stack.directory / "fragments"),
                       env=env, stderr_too=False, columns=80)

    assert term.returncode == 0, term
    lines = term.text.replace("\r", "").splitlines()
    table = lines[lines.index(next(line for line in lines if "Count" in line)):]
    assert all(len(line) <= 80 and "…" not in line for line in table), table
    rows = {m[1]: (m[2], m[3]) for line in table[1:] if (m := ROW.match(line))}
    assert rows == {
        "Journals": ("2", None), "Skipped (suspended)": ("0", None),
        "Fragments": ("6", "6.2 KiB"), "Pruned": ("2", "2.3 KiB"),
        "Already gone": ("0", "0 B"), "Kept": ("4", "3.9 KiB"),
        "Permission denied": ("0", None), "Failed": ("0", None)}
