"""`gazctl journals edit` against a real broker, with a scripted editor.

The editor, run in place of vi, is the scripted program of
`tests.gazctl.editor_support`.
"""

from __future__ import annotations

from pathlib import Path

from gazette_core.broker.protocol import protocol_pb2 as pb
from tests.gazctl.editor_support import ScriptedEditor
from tests.gazctl.support import (
    assert_garbage_kept,
    cli,
    garbage_editor,
    gazctl,
    isolated_env,
    journals,
    ok,
)

TREE = """\
name: {p}/
replication: 1
fragment:
  length: 4096
  compression_codec: NONE
  stores:
    - file:///
  refresh_interval: 1s
children:
  - name: {p}/one
    revision: 0
    labels:
      - name: topic
        value: one
  - name: {p}/two
    revision: 0
    labels:
      - name: topic
        value: two
"""


def create(address: str, prefix: str) -> dict[str, int]:
    ok("journals", "apply", "--broker.address", address, input=TREE.format(p=prefix))
    return {j.spec.name: j.mod_revision for j in journals(address, f"prefix={prefix}/")}


def spec_of(address: str, name: str) -> pb.ListResponse.Journal:
    return journals(address, f"name={name}")[0]


def test_saved_change_applies_only_the_changed_journal(address: str,
                                                       editor: ScriptedEditor) -> None:
    before = create(address, "edit/change")
    editor.script([["value: two", "value: deux"]])
    result = ok("journals", "edit", "-l", "prefix=edit/change/", "--broker.address", address)
    shown = editor.opened()[0]
    assert shown.startswith("#\u2699 Edit the journal specs below")
    assert "name: edit/change/one" in shown and "value: two" in shown
    assert result.stdout.splitlines()[-2:-1] == ["0 created, 1 changed, 1 unchanged, 0 deleted"]
    assert result.stdout.splitlines()[-1].startswith("applied 1 change(s) at revision ")
    two = spec_of(address, "edit/change/two")
    assert [(lb.name, lb.value) for lb in two.spec.labels.labels] == [("topic", "deux")]
    assert spec_of(address, "edit/change/one").mod_revision == before["edit/change/one"]


def test_invalid_edit_reopens_with_the_error_then_applies_the_fix(
        address: str, editor: ScriptedEditor) -> None:
    create(address, "edit/invalid")
    editor.script([["replication: 1", "replication: many"]],
                  [["replication: many", "replication: 1"], ["value: one", "value: uno"]])
    result = ok("journals", "edit", "-l", "prefix=edit/invalid/", "--broker.address", address)
    _, second = editor.opened()
    warnings = [line for line in second.splitlines() if line.startswith("#\u26a0")]
    assert warnings[0] == "#\u26a0 Nothing was applied: fix these errors and save again."
    assert "replication" in warnings[1] and "many" in warnings[1]
    assert "replication: many" in second  # the user's own text, not a fresh listing
    assert result.stdout.splitlines()[-1].startswith("applied 1 change(s) at revision ")
    one = spec_of(address, "edit/invalid/one")
    assert [(lb.name, lb.value) for lb in one.spec.labels.labels] == [("topic", "uno")]


def test_refused_apply_reopens_with_the_brokers_answer(address: str,
                                                       editor: ScriptedEditor) -> None:
    before = create(address, "edit/refused")
    stale = before["edit/refused/one"]
    changed = TREE.format(p="edit/refused").replace("revision: 0", "revision: -1").replace(
        "value: one", "value: other")
    editor.script({"argv": ["journals", "apply", "--broker.address", address],
                   "input": changed, "replace": [["value: one", "value: mine"]]},
                  [[f"revision: {stale}", "revision: -1"]])
    result = ok("journals", "edit", "-l", "name=edit/refused/one", "--broker.address", address)
    second = editor.opened()[1]
    assert any("ETCD_TRANSACTION_FAILED" in line for line in second.splitlines()
               if line.startswith("#\u26a0")), second
    assert result.stdout.splitlines()[-1].startswith("applied 1 change(s) at revision ")
    one = spec_of(address, "edit/refused/one")
    assert [(lb.name, lb.value) for lb in one.spec.labels.labels] == [("topic", "mine")]


def test_unchanged_or_emptied_file_applies_nothing(address: str,
                                                   editor: ScriptedEditor) -> None:
    before = create(address, "edit/noop")
    editor.script([], "empty")
    first = ok("journals", "edit", "-l", "prefix=edit/noop/", "--broker.address", address)
    assert first.stdout == "Cancelled; nothing to do.\n"
    second = ok("journals", "edit", "-l", "prefix=edit/noop/", "--broker.address", address)
    assert second.stdout == "Cancelled; empty file.\n"
    assert {j.spec.name: j.mod_revision
            for j in journals(address, "prefix=edit/noop/")} == before


def test_failing_editor_exits_1_and_keeps_the_file(address: str,
                                                   editor: ScriptedEditor) -> None:
    create(address, "edit/fail")
    editor.script("fail")
    result = cli("journals", "edit", "-l", "prefix=edit/fail/", "--broker.address", address)
    assert result.exit_code == 1
    message = str(result.exception)
    assert "exited with status 3; last edits saved to " in message
    saved = Path(message.rsplit("last edits saved to ", 1)[1])
    assert saved.suffix == ".yaml" and "name: edit/fail/" in saved.read_text()
    saved.unlink()


def test_binary_garbage_from_the_editor_is_one_line_and_keeps_the_file(
        address: str, tmp_path: Path, state_home: Path) -> None:
    before = create(address, "edit/garbage")
    env = {**isolated_env(state_home), "BROKER_ADDRESS": address,
           "GAZ_EDITOR": garbage_editor(tmp_path)}
    proc = gazctl("journals", "edit", "-l", "prefix=edit/garbage/", env=env)

    assert_garbage_kept(proc)
    assert {j.spec.name: j.mod_revision
            for j in journals(address, "prefix=edit/garbage/")} == before
