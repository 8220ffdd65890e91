"""`gazctl shards edit` (with a scripted editor) and `shards unassign`, on real consumers.

The editor, run in place of vi, is the scripted program of
`tests.gazctl.editor_support`.
"""

from __future__ import annotations

import base64
import json
import os
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.keyspace.etcd_util import prefix_range_end
from gazette_core.local.consumers import etcd_prefix
from gazette_core.local.stack import Stack
from tests.gazctl.editor_support import ScriptedEditor
from tests.gazctl.shards_support import (
    LOGS,
    log_journals,
    primary_of,
    shard_stack,
    shard_yaml,
    shards,
    wait_primaries,
)
from tests.gazctl.support import (
    assert_garbage_kept,
    garbage_editor,
    gazctl,
    ok,
    one_error_line,
    run_main,
)
from tests.gazctl.terminal_support import env_for, in_terminal


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, state_home: Path) -> Iterator[Stack]:
    with shard_stack(tmp_path_factory.mktemp("shards")) as s:
        ok("journals", "apply", input=log_journals(*[f"edit-{i:03d}" for i in range(6)]))
        ok("shards", "apply", input=shard_yaml(*[f"edit-{i:03d}" for i in range(6)]))
        wait_primaries(s, "id:prefix=edit-")
        yield s


def test_saved_change_applies_only_the_changed_shard(stack: Stack,
                                                     editor: ScriptedEditor) -> None:
    before = {s.spec.id: s.mod_revision for s in shards(stack, "id:prefix=edit-00")}
    editor.script([["- id: edit-001\n", "- id: edit-001\n  hot_standbys: 1\n"]])
    result = ok("shards", "edit", "-l", "id in (edit-000, edit-001)")
    shown = editor.opened()[0]
    assert shown.startswith("#\u2699 Edit the shard specs below")
    assert "common:\n" in shown and "- id: edit-000\n" in shown
    assert result.stdout.splitlines()[-2] == "0 created, 1 changed, 1 unchanged, 0 deleted"
    assert result.stdout.splitlines()[-1].startswith("applied 1 change(s) at revision ")
    after = {s.spec.id: s for s in shards(stack, "id in (edit-000, edit-001)")}
    assert after["edit-001"].spec.hot_standbys == 1
    assert after["edit-000"].mod_revision == before["edit-000"]


def test_invalid_edit_reopens_with_the_error_then_applies_the_fix(
        stack: Stack, editor: ScriptedEditor) -> None:
    editor.script([["max_txn_duration: 1s", "max_txn_duration: soon"]],
                  [["max_txn_duration: soon", "max_txn_duration: 2s"]])
    result = ok("shards", "edit", "-l", "id=edit-002")
    warnings = editor.warnings(1)
    assert warnings[0] == "#\u26a0 Nothing was applied: fix these errors and save again."
    assert "max_txn_duration" in warnings[1] and "soon" in warnings[1]
    assert "max_txn_duration: soon" in editor.opened()[1]  # the user's text, not a new listing
    assert result.stdout.splitlines()[-1].startswith("applied 1 change(s) at revision ")
    assert shards(stack, "id=edit-002")[0].spec.max_txn_duration.seconds == 2


def test_a_missing_journal_reopens_naming_it(stack: Stack, editor: ScriptedEditor) -> None:
    editor.script([[f"prefix: {LOGS}", "prefix: nowhere/logs"]],
                  [["prefix: nowhere/logs", f"prefix: {LOGS}"], ["value: json", "value: sqlite"]])
    result = ok("shards", "edit", "-l", "id=edit-003")
    assert any("recovery log journal 'nowhere/logs/edit-003' does not exist" in line
               for line in editor.warnings(1)), editor.opened()[1]
    assert result.stdout.splitlines()[-1].startswith("applied 1 change(s) at revision ")
    labels = shards(stack, "id=edit-003")[0].spec.labels.labels
    assert [(lb.name, lb.value) for lb in labels] == [("store", "sqlite")]


def test_refused_apply_reopens_with_the_consumers_answer(stack: Stack,
                                                         editor: ScriptedEditor) -> None:
    stale = shards(stack, "id=edit-004")[0].mod_revision
    other = shard_yaml("edit-004", revision=-1, extra="  hint_backups: 3\n")
    editor.script({"argv": ["shards", "apply"], "input": other,
                   "replace": [["- id: edit-004\n", "- id: edit-004\n  hot_standbys: 1\n"]]},
                  [[f"revision: {stale}", "revision: -1"]])
    result = ok("shards", "edit", "-l", "id=edit-004")
    assert any("ETCD_TRANSACTION_FAILED" in line for line in editor.warnings(1))
    assert result.stdout.splitlines()[-1].startswith("applied 1 change(s) at revision ")
    assert shards(stack, "id=edit-004")[0].spec.hot_standbys == 1


def test_unchanged_or_emptied_file_applies_nothing(stack: Stack,
                                                   editor: ScriptedEditor) -> None:
    before = shards(stack, "id=edit-005")[0].mod_revision
    editor.script([], "empty")
    assert ok("shards", "edit", "-l", "id=edit-005").stdout == "Cancelled; nothing to do.\n"
    assert ok("shards", "edit", "-l", "id=edit-005").stdout == "Cancelled; empty file.\n"
    assert shards(stack, "id=edit-005")[0].mod_revision == before


def test_edit_needs_a_selector_that_matches(stack: Stack,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_main(capsys, "shards", "edit", "-l", "id=nothing-here")
    assert (code, one_error_line(err)) == (3, "error: no shards match 'id=nothing-here'")


def test_unassign_dry_run_changes_nothing_and_failed_only_finds_none(
        stack: Stack, capsys: pytest.CaptureFixture[str]) -> None:
    before = shards(stack, "id=chunks-part-000")[0]
    out = ok("shards", "unassign", "-l", "id=chunks-part-000", "--dry-run").stdout
    assert out.startswith("would unassign chunks-part-000 (was PRIMARY on consumer-"), out
    code, _, err = run_main(capsys, "shards", "unassign", "-l", "id=chunks-part-000",
                            "--failed")
    assert (code, one_error_line(err)) == (
        3, "error: no selected shard has a failed replica")
    after = shards(stack, "id=chunks-part-000")[0]
    assert (after.route, after.mod_revision) == (before.route, before.mod_revision)


def test_unassign_moves_the_primary_to_another_consumer(stack: Stack) -> None:
    first = primary_of(shards(stack, "id=chunks-part-001")[0])
    members = _members(stack)
    out = ok("shards", "unassign", "-l", "id=chunks-part-001").stdout
    assert out == f"unassigned chunks-part-001 (was PRIMARY on {members})\n"
    deadline = time.monotonic() + 30
    while (now := primary_of(shards(stack, "id=chunks-part-001")[0])) in ("", first):
        assert time.monotonic() < deadline, "the primary never moved"
        time.sleep(0.1)
    assert now in ("consumer-1", "consumer-2") and now != first


def _members(stack: Stack) -> str:
    """What unassign prints of chunks-part-001's replicas, as listed now."""
    shard = shards(stack, "id=chunks-part-001")[0]
    codes = {300: "PRIMARY", 200: "STANDBY", 100: "BACKFILL", 0: "IDLE", 400: "FAILED"}
    return ", ".join(f"{m.suffix}:{codes[s.code]}"
                     for m, s in zip(shard.route.members, shard.status, strict=True))


def test_a_failed_shard_lists_failed_with_its_error_and_unassign_failed_takes_it(
        stack: Stack, state_home: Path) -> None:
    ok("journals", "apply", input=log_journals("failing-000"))
    bogus = "  labels:\n  - name: store\n    value: bogus\n"  # the summer fails at start
    ok("shards", "apply", input=shard_yaml("failing-000", extra=bogus))
    deadline = time.monotonic() + 30
    while 400 not in [s.code for s in (shards(stack, "id=failing-000")[0]).status]:
        assert time.monotonic() < deadline, "the shard never failed"
        time.sleep(0.1)

    listed = json.loads(ok("shards", "list", "-l", "id=failing-000", "-o", "jsonl").stdout)
    errors = [e for s in listed["status"] if s["code"] == "FAILED" for e in s.get("errors", [])]
    assert "store='bogus'" in errors[0], listed
    # The table says why, in full when piped...
    header, row = ok("shards", "list", "-l", "id=failing-000").stdout.splitlines()
    assert header.split() == ["ID", "Status", "Error"]
    assert row.split(None, 2) == ["failing-000", "FAILED", errors[0].splitlines()[0]]
    # ...and cut to the width of a terminal.
    drawn = in_terminal("shards", "list", "-l", "id=failing-000", stderr_too=True, columns=60,
                        env={**env_for(state_home), **_addresses(), "COLUMNS": "60"})
    lines = drawn.text.splitlines()
    assert drawn.returncode == 0 and len(lines) == 2, drawn.text
    assert lines[1].startswith("failing-000  FAILED  " + errors[0][:30]), lines
    assert len(lines[1].rstrip()) == 60 and lines[1].rstrip().endswith("\u2026"), lines
    failed = failed_assignments(stack, "failing-000")
    assert failed
    out = ok("shards", "unassign", "-l", "id:prefix=failing-", "--failed").stdout
    assert out.startswith("unassigned failing-000 (was FAILED on consumer-"), out
    assert ":FAILED" in out
    # The FAILED assignments are gone from Etcd (the allocator may assign the shard anew:
    # a new assignment has a new create revision).
    now = all_assignments(stack, "failing-000")
    assert not [key for key, created in failed.items() if now.get(key) == created]


def _addresses() -> dict[str, str]:
    """The stack's addresses, as the fixture set them for this process."""
    return {name: os.environ[name] for name in ("BROKER_ADDRESS", "CONSUMER_ADDRESS")}


def all_assignments(stack: Stack, shard: str) -> dict[str, int]:
    """Assignment keys of `shard` in Etcd, with their create revisions."""
    return {key: created for key, (created, _) in _assignments(stack, shard).items()}


def failed_assignments(stack: Stack, shard: str) -> dict[str, int]:
    return {key: created for key, (created, status) in _assignments(stack, shard).items()
            if status.code == cpb.ReplicaStatus.FAILED}


def _assignments(stack: Stack, shard: str) -> dict[str, tuple[int, cpb.ReplicaStatus]]:
    prefix = f"{etcd_prefix(stack.app)}/assign/{shard}#".encode()
    body = json.dumps({"key": base64.b64encode(prefix).decode(),
                       "range_end": base64.b64encode(prefix_range_end(prefix)).decode()})
    req = urllib.request.Request(f"{stack.etcd.endpoint}/v3/kv/range", data=body.encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as resp:
        kvs = json.loads(resp.read()).get("kvs", [])
    return {base64.b64decode(kv["key"]).decode(): (
        int(kv["create_revision"]),
        cpb.ReplicaStatus.FromString(base64.b64decode(kv.get("value", ""))))
        for kv in kvs}


def test_binary_garbage_from_the_editor_is_one_line_and_keeps_the_file(
        stack: Stack, tmp_path: Path) -> None:
    before = shards(stack, "id=chunks-part-002")[0].mod_revision
    env = {**os.environ, "GAZ_EDITOR": garbage_editor(tmp_path)}
    proc = gazctl("shards", "edit", "-l", "id=chunks-part-002", env=env)

    assert_garbage_kept(proc)
    assert shards(stack, "id=chunks-part-002")[0].mod_revision == before
