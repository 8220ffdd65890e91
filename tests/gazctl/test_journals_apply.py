"""`gazctl journals apply` against a real broker: files, stdin, dry runs and refusals."""

from __future__ import annotations

import re
from pathlib import Path

from google.protobuf.duration_pb2 import Duration

from gazette_core.broker.protocol import protocol_pb2 as pb
from tests.gazctl.support import cli, gazctl, isolated_env, journal_set, journals, ok

TREE = """\
name: {p}/
replication: 1
labels:
  - name: app
    value: billing
  - name: content-type
    value: application/x-ndjson
fragment:
  length: 2048
  compression_codec: SNAPPY
  stores:
    - file:///
  refresh_interval: 2s
  retention: 1h0m0s
children:
  - name: {p}/events
    revision: 0
    labels:
      - name: topic
        value: events
  - name: {p}/raw
    revision: 0
    labels:
      - name: content-type
        value: text/plain
    fragment:
      length: 4096
      compression_codec: NONE
"""


def _label_set(*pairs: tuple[str, str]) -> pb.LabelSet:
    return pb.LabelSet(labels=[pb.Label(name=n, value=v) for n, v in pairs])


def _expected_spec(name: str, labels: pb.LabelSet, length: int, codec: int) -> pb.JournalSpec:
    return pb.JournalSpec(
        name=name, replication=1, labels=labels,
        fragment=pb.JournalSpec.Fragment(
            length=length, compression_codec=codec, stores=["file:///"],  # type: ignore[arg-type]
            refresh_interval=Duration(seconds=2), retention=Duration(seconds=3600)))


def _applied_revision(stdout: str, changes: int) -> int:
    last = stdout.splitlines()[-1]
    match = re.fullmatch(rf"applied {changes} change\(s\) at revision (\d+)", last)
    assert match, stdout
    return int(match.group(1))


def test_apply_file_creates_journals_with_pushed_down_specs(address: str, tmp_path: Path) -> None:
    specs = tmp_path / "journals.yaml"
    specs.write_text(TREE.format(p="apply/file"))

    result = ok("journals", "apply", "--specs", str(specs), "--broker.address", address)

    revision = _applied_revision(result.stdout, 2)
    assert result.stdout == ("create apply/file/events (new)\n"
                             "create apply/file/raw (new)\n"
                             "2 created, 0 changed, 0 unchanged, 0 deleted\n"
                             f"applied 2 change(s) at revision {revision}\n")
    listed = journals(address, "prefix=apply/file/")
    assert [j.spec for j in listed] == [
        _expected_spec("apply/file/events",
                       _label_set(("app", "billing"), ("content-type", "application/x-ndjson"),
                                  ("topic", "events")),
                       2048, pb.CompressionCodec.SNAPPY),
        _expected_spec("apply/file/raw",
                       _label_set(("app", "billing"), ("content-type", "text/plain")),
                       4096, pb.CompressionCodec.NONE),
    ]
    assert [j.mod_revision for j in listed] == [revision, revision]


def test_apply_stdin_creates_then_updates_only_changed_journals(address: str) -> None:
    created = ok("journals", "apply", "--specs", "-", "--broker.address", address,
                 input=TREE.format(p="apply/stdin"))
    first = _applied_revision(created.stdout, 2)
    assert [j.spec.name for j in journals(address, "prefix=apply/stdin/")] == [
        "apply/stdin/events", "apply/stdin/raw"]

    again = TREE.format(p="apply/stdin").replace("revision: 0", "revision: -1").replace(
        "length: 2048", "length: 8192")
    updated = ok("journals", "apply", "--broker.address", address, input=again)

    second = _applied_revision(updated.stdout, 1)
    # Only the journal that inherits the directory's length changes, so only it is sent.
    assert updated.stdout == ("update apply/stdin/events (any revision)\n"
                              "unchanged apply/stdin/raw (any revision)\n"
                              "0 created, 1 changed, 1 unchanged, 0 deleted\n"
                              f"applied 1 change(s) at revision {second}\n")
    assert second > first
    listed = journals(address, "prefix=apply/stdin/")
    assert [j.spec.fragment.length for j in listed] == [8192, 4096]
    assert [j.mod_revision for j in listed] == [second, first]


def test_dry_run_prints_changes_and_applies_nothing(address: str) -> None:
    result = ok("journals", "apply", "--dry-run", "--broker.address", address,
                input=TREE.format(p="apply/dry"))

    lines = result.stdout.splitlines()
    assert [line for line in lines if not line.startswith("    ")] == [
        "create apply/dry/events (new)", "create apply/dry/raw (new)",
        "2 created, 0 changed, 0 unchanged, 0 deleted", "dry run: 2 change(s) not applied"]
    # Each created journal's whole spec, as added lines.
    raw = lines[lines.index("create apply/dry/raw (new)") + 1:-2]
    assert raw[0] == "    @@ -0,0 +1,14 @@" and all(line.startswith("    +") for line in raw[1:])
    assert "    +name: apply/dry/raw" in raw and "    +  length: 4096" in raw
    assert journals(address, "prefix=apply/dry/") == []


def test_dry_run_shows_the_diff_of_a_changed_journal(address: str) -> None:
    ok("journals", "apply", "--broker.address", address, input=TREE.format(p="apply/diff"))
    changed = TREE.format(p="apply/diff").replace("revision: 0", "revision: -1").replace(
        "value: events", "value: audit")

    result = ok("journals", "apply", "--dry-run", "--broker.address", address, input=changed)

    lines = result.stdout.splitlines()
    assert lines[0] == "update apply/diff/events (any revision)"
    assert [line for line in lines if line.startswith(("    -", "    +"))] == [
        "    -  value: events", "    +  value: audit"]
    assert lines[-2:] == ["0 created, 1 changed, 1 unchanged, 0 deleted",
                          "dry run: 1 change(s) not applied"]
    events = journals(address, "name=apply/diff/events")[0]
    assert [(lb.name, lb.value) for lb in events.spec.labels.labels][-1] == ("topic", "events")


def test_max_txn_size_splits_the_apply_into_transactions(address: str) -> None:
    result = ok("journals", "apply", "--max-txn-size", "1", "--broker.address", address,
                input=TREE.format(p="apply/split"))

    revision = _applied_revision(result.stdout, 2)
    listed = journals(address, "prefix=apply/split/")
    # One transaction each: the journals were written at different revisions.
    assert listed[0].mod_revision < listed[1].mod_revision == revision


def test_invalid_spec_exits_1_naming_the_field_and_applies_nothing(
        address: str, state_home: Path) -> None:
    bad = TREE.format(p="apply/bad").replace("length: 4096", "length: 12")

    proc = gazctl("journals", "apply", "--broker.address", address, input=bad.encode(),
                  env=isolated_env(state_home))

    assert proc.returncode == 1
    assert proc.stdout == b""
    assert proc.stderr.decode() == (
        "error: invalid input: children[1].fragment.length: "
        "expected 1024 <= length <= 17179869184 (got 12)\n")
    assert journals(address, "prefix=apply/bad/") == []


def test_a_postfix_template_that_cannot_be_evaluated_is_refused_before_sending(
        address: str, state_home: Path) -> None:
    bad = TREE.format(p="apply/postfix").replace(
        "      compression_codec: NONE\n",
        "      compression_codec: NONE\n      path_postfix_template: '{{ .__class__ }}'\n")

    proc = gazctl("journals", "apply", "--broker.address", address, input=bad.encode(),
                  env=isolated_env(state_home))

    assert proc.returncode == 1
    assert proc.stderr.decode() == (
        "error: invalid input: children[1].fragment.path_postfix_template: unsupported action "
        "{{ .__class__ }} in '{{ .__class__ }}': only field chains like "
        ".Spool.FirstAppendTime.Format\n")
    assert journals(address, "prefix=apply/postfix/") == []


def test_reapplying_a_create_fails_with_transaction_failed(
        address: str, state_home: Path) -> None:
    ok("journals", "apply", "--broker.address", address, input=TREE.format(p="apply/twice"))
    before = journals(address, "prefix=apply/twice/")
    # One new journal next to the two existing ones: the transaction is all or nothing.
    tree = TREE.format(p="apply/twice") + "  - name: apply/twice/zzz\n    revision: 0\n"

    proc = gazctl("journals", "apply", "--broker.address", address, input=tree.encode(),
                  env=isolated_env(state_home))

    assert proc.returncode == 1
    revision = before[0].mod_revision
    assert proc.stderr.decode() == (
        "error: broker refused: ETCD_TRANSACTION_FAILED: journal apply/twice/events: expected "
        f"revision 0 (a new journal), but its current revision is {revision}; journal "
        "apply/twice/raw: expected revision 0 (a new journal), but its current revision is "
        f"{revision}; nothing was applied (`gazctl journals list -o yaml` shows current "
        "revisions; revision 0 only creates journals that do not exist yet, -1 applies at any "
        "revision)\n")
    after = journals(address, "prefix=apply/twice/")
    assert [(j.spec, j.mod_revision) for j in after] == [(j.spec, j.mod_revision) for j in before]


def test_update_at_a_stale_revision_is_refused(address: str) -> None:
    created = ok("journals", "apply", "--broker.address", address,
                 input=TREE.format(p="apply/stale"))
    revision = _applied_revision(created.stdout, 2)
    at_revision = TREE.format(p="apply/stale").replace("revision: 0", f"revision: {revision}")
    ok("journals", "apply", "--broker.address", address,
       input=at_revision.replace("length: 2048", "length: 8192"))

    stale = cli("journals", "apply", "--broker.address", address,
                input=at_revision.replace("length: 2048", "length: 16384"))

    assert stale.exit_code == 1
    now = journals(address, "name=apply/stale/events")[0].mod_revision
    assert str(stale.exception) == (
        f"ETCD_TRANSACTION_FAILED: journal apply/stale/events: expected revision {revision}, "
        f"but its current revision is {now}; nothing was applied")
    assert [j.spec.fragment.length for j in journals(address, "prefix=apply/stale/")] == [
        8192, 4096]


def test_unreadable_specs_file_is_an_input_error(address: str, tmp_path: Path,
                                                 state_home: Path) -> None:
    missing = tmp_path / "missing.yaml"

    proc = gazctl("journals", "apply", "--specs", str(missing), "--broker.address", address,
                  env=isolated_env(state_home))

    assert proc.returncode == 2
    assert proc.stderr.decode() == (
        f"error: invalid input: --specs: cannot read '{missing}': No such file or directory\n")


def test_200_journals_apply_by_default_in_as_few_transactions_as_etcd_takes(
        address: str, state_home: Path) -> None:
    # 200 changes are more than the 128 operations Etcd (at its default --max-txn-ops)
    # takes in one transaction: --max-txn-size 0 splits them to fit, in two.
    proc = gazctl("journals", "apply", env={**isolated_env(state_home),
                                            "BROKER_ADDRESS": address},
                  input=journal_set("many/", *[f"j-{i:03d}" for i in range(200)]))

    assert (proc.returncode, proc.stderr) == (0, b"")
    revision = _applied_revision(proc.stdout.decode(), 200)
    listed = journals(address, "prefix=many/")
    assert len(listed) == 200
    first, last = sorted({j.mod_revision for j in listed})
    assert last == revision
    assert sum(j.mod_revision == first for j in listed) == 128
