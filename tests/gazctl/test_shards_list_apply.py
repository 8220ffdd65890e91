"""`gazctl shards list` and `shards apply` against real consumers on the local stack."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.protobuf import json_format, text_format

from gazctl.connection import CONSUMER_SETTINGS
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.local import stack as local_stack
from gazette_core.local.stack import Stack
from tests.gazctl.shards_support import (
    CHUNKS,
    EXAMPLE_SHARDS,
    LOGS,
    log_journals,
    shard_stack,
    shard_yaml,
    shards,
    wait_primaries,
)
from tests.gazctl.support import (
    GAZCTL,
    command_tree,
    isolated_env,
    ok,
    one_error_line,
    piped_gazctl,
    run_main,
    stop,
)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, state_home: Path) -> Iterator[Stack]:
    with shard_stack(tmp_path_factory.mktemp("shards")) as s:
        yield s


def test_table_shows_reduced_statuses_routes_and_labels(stack: Stack) -> None:
    lines = ok("shards", "list", "--rf", "-p", "-r", "-L", "store", "-l",
               "store=sqlite").stdout.splitlines()
    assert lines[0].split() == ["ID", "Status", "RF", "Primary", "Replicas", "store"]
    rows = [line.split() for line in lines[1:]]
    assert [row[0] for row in rows] == EXAMPLE_SHARDS[:4]
    for row in rows:
        # One replica PRIMARY and one STANDBY reduce to PRIMARY.
        assert row[1:3] == ["PRIMARY", "2"] and row[5] == "sqlite", row
        assert row[3].endswith(":PRIMARY") and row[4].endswith(":STANDBY"), row
        assert {row[3].split(":")[0], row[4].split(":")[0]} == {"consumer-1", "consumer-2"}


def test_yaml_listing_applies_back_unchanged_and_lists_byte_identical(stack: Stack) -> None:
    listing = ok("shards", "list", "-o", "yaml").stdout
    assert listing.startswith("common:\n  recovery_log_prefix: examples/stream-sum/")
    # What all 8 shards share is said once, in `common`; each shard keeps its own sources.
    common, entries = listing.split("\nshards:\n")
    assert {"  hot_standbys: 1", "  max_txn_duration: 1s"} <= set(common.splitlines())
    assert ("hot_standbys" not in entries, entries.count("- journal: ")) == (True, 8)
    revisions = {s.spec.id: s.mod_revision for s in shards(stack, "store")}
    applied = ok("shards", "apply", input=listing).stdout.splitlines()
    assert applied[-2:] == ["0 created, 0 changed, 8 unchanged, 0 deleted", "nothing to apply"]
    assert {s.spec.id: s.mod_revision for s in shards(stack, "store")} == revisions
    assert ok("shards", "list", "-o", "yaml").stdout == listing


def test_json_is_the_whole_list_response_in_one_object_as_go_prints_it(stack: Stack) -> None:
    out = ok("shards", "list", "-o", "json", "-l", "store=json").stdout

    assert out.endswith("}\n") and out.count("\n") == 1
    doc = json.loads(out)
    assert list(doc) == ["status", "header", "shards", "extension"]
    assert (doc["status"], doc["extension"]) == ("OK", None)
    listed = doc["shards"]  # what `jq '.shards[]'` walks
    assert [s["spec"]["id"] for s in listed] == EXAMPLE_SHARDS[4:]
    assert [list(s) for s in listed] == [
        ["spec", "mod_revision", "route", "status", "create_revision"]] * 4
    spec = listed[0]["spec"]
    assert (spec["max_txn_duration"], spec["min_txn_duration"]) == ("1s", "0s")
    assert (spec["hot_standbys"], spec["disable"], spec["ring_buffer_size"]) == (1, False, 0)
    assert {s["status"][0]["code"] for s in listed} <= {"PRIMARY", "STANDBY"}
    revisions = {s.spec.id: s.mod_revision for s in shards(stack, "store=json")}
    parsed = json_format.Parse(out, cpb.ListResponse())
    assert {s.spec.id: s.mod_revision for s in parsed.shards} == revisions
    assert [s.spec.sources for s in parsed.shards] == [
        s.spec.sources for s in shards(stack, "store=json")]


def test_jsonl_is_one_shard_per_line_and_proto_the_list_response(stack: Stack) -> None:
    lines = ok("shards", "list", "-o", "jsonl", "-l", "store=json").stdout.splitlines()
    listed = [json.loads(line) for line in lines]
    assert [s["spec"]["id"] for s in listed] == EXAMPLE_SHARDS[4:]
    assert {s["status"][0]["code"] for s in listed} <= {"PRIMARY", "STANDBY"}
    assert json_format.Parse(lines[0], cpb.ListResponse.Shard()).spec.id == EXAMPLE_SHARDS[4]
    proto = ok("shards", "list", "-o", "proto", "-l", "store=json").stdout
    resp = text_format.Parse(proto, cpb.ListResponse())
    assert [s.spec.id for s in resp.shards] == EXAMPLE_SHARDS[4:]


@pytest.mark.parametrize(("output", "expected"), [
    ("table", ["ID  Status"]), ("yaml", ["shards: []"]), ("jsonl", []),
])
def test_a_selector_matching_nothing_is_an_empty_listing(stack: Stack, output: str,
                                                        expected: list[str]) -> None:
    result = ok("shards", "list", "-l", "id=nothing-here", "-o", output)

    assert (result.stdout.splitlines(), result.stderr) == (expected, "")
    doc = json.loads(ok("shards", "list", "-l", "id=nothing-here", "-o", "json").stdout)
    assert (doc["status"], doc["shards"]) == ("OK", [])


def test_lag_is_the_unread_bytes_of_each_source_and_their_total(stack: Stack) -> None:
    # Half a message: the shard reads up to it and waits for the rest, 9 bytes behind.
    ok("journals", "append", "-l", f"name={CHUNKS}/part-003", input=b'{"partial')
    lines = ok("shards", "list", "--lag", "-l", "store=sqlite").stdout.splitlines()
    assert lines[0].split() == ["ID", "Status", "Lag"]
    lags = {row.split()[0]: row.split()[-1] for row in lines[1:]}
    assert lags == {"chunks-part-000": f"{CHUNKS}/part-000:0",
                    "chunks-part-001": f"{CHUNKS}/part-001:0",
                    "chunks-part-002": f"{CHUNKS}/part-002:0",
                    "chunks-part-003": f"{CHUNKS}/part-003:9", "total": "9"}
    as_json = ok("shards", "list", "--lag", "-o", "json", "-l", "id=chunks-part-003").stdout
    assert json.loads(as_json)["shards"][0]["lag"] == {f"{CHUNKS}/part-003": 9}
    as_jsonl = ok("shards", "list", "--lag", "-o", "jsonl", "-l", "id=chunks-part-003").stdout
    assert json.loads(as_jsonl)["lag"] == {f"{CHUNKS}/part-003": 9}


UNREACHABLE = "http://127.0.0.1:9"  # discard port: nothing listens there
SELECTING = sorted(path for path, cmd in command_tree().items()
                   if path.startswith("gazctl shards ")
                   and any(p.name == "selector" for p in cmd.params))


@pytest.mark.parametrize("path", [p for p in SELECTING if p != "gazctl shards list"])
def test_a_selector_matching_nothing_exits_3_on_every_shards_command_but_list(
        stack: Stack, path: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(capsys, *path.split()[1:], "-l", "id=nothing-here")
    assert (code, out) == (3, "")
    assert one_error_line(err) == "error: no shards match 'id=nothing-here'"


def test_an_unreachable_consumer_is_one_line(
        stack: Stack, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_main(capsys, "shards", "list", "--consumer.address", UNREACHABLE,
                            "--timeout", "2s")
    assert code == 1
    assert one_error_line(err).startswith(f"error: cannot reach consumer at {UNREACHABLE}")


def test_apply_creates_then_sends_only_what_changed_with_a_dry_run_diff(stack: Stack) -> None:
    ok("journals", "apply", input=log_journals("apply-000", "apply-001"))
    created = ok("shards", "apply", input=shard_yaml("apply-000", "apply-001")).stdout
    assert "2 created, 0 changed, 0 unchanged, 0 deleted" in created
    wait_primaries(stack, "id:prefix=apply-")
    before = {s.spec.id: s.mod_revision for s in shards(stack, "id:prefix=apply-")}
    changed = shard_yaml("apply-000", revision=-1, extra="  hot_standbys: 1\n")

    dry = ok("shards", "apply", "--dry-run", input=changed).stdout.splitlines()
    assert dry[0] == "update apply-000 (any revision)"
    assert "    +  hot_standbys: 1" in dry
    assert dry[-1] == "dry run: 1 change(s) not applied"
    assert {s.spec.id: s.mod_revision for s in shards(stack, "id:prefix=apply-")} == before

    done = ok("shards", "apply", input=changed).stdout.splitlines()
    assert done[-2] == "0 created, 1 changed, 0 unchanged, 0 deleted"
    after = {s.spec.hot_standbys: s.spec.id for s in shards(stack, "id:prefix=apply-")}
    assert after == {1: "apply-000", 0: "apply-001"}
    assert shards(stack, "id=apply-001")[0].mod_revision == before["apply-001"]


@pytest.mark.parametrize(("text", "message"), [
    (shard_yaml("missing-log"),
     f"shard 'missing-log': recovery log journal '{LOGS}/missing-log' does not exist"),
    (shard_yaml("apply-000", revision=-1, source=f"{CHUNKS}/part-999"),
     f"shard 'apply-000' sources[0]: source journal '{CHUNKS}/part-999' does not exist"),
    (shard_yaml("apply-000", revision=-1, source=f"{LOGS}/chunks-part-000"),
     f"shard 'apply-000' sources[0]: source journal '{LOGS}/chunks-part-000' has content-type "
     "'application/x-gazette-recoverylog', which has no message framing"),
    (shard_yaml("part-001", revision=-1).replace(LOGS, CHUNKS),
     f"shard 'part-001': recovery log journal '{CHUNKS}/part-001' has content-type "
     "'application/x-ndjson', not 'application/x-gazette-recoverylog'"),
])
def test_apply_names_the_missing_or_mistyped_journal(
        stack: Stack, capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str,
        message: str) -> None:
    (tmp_path / "set.yaml").write_text(text)
    for extra in ([], ["--dry-run"]):
        code, out, err = run_main(capsys, "shards", "apply", "--specs",
                                  str(tmp_path / "set.yaml"), *extra)
        assert (code, out) == (1, "")
        assert one_error_line(err).startswith(f"error: invalid input: {message}"), err
    assert not shards(stack, "id=missing-log")


def test_stale_revision_is_refused_and_max_txn_size_splits_transactions(
        stack: Stack, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    ok("journals", "apply", input=log_journals("txn-000", "txn-001", "txn-002"))
    ok("shards", "apply", input=shard_yaml("txn-000"))
    (tmp_path / "set.yaml").write_text(
        shard_yaml("txn-001", "txn-002") + shard_yaml("txn-000").split("shards:\n")[1])
    code, _, err = run_main(capsys, "shards", "apply", "--specs", str(tmp_path / "set.yaml"),
                              "--max-txn-size", "2")
    assert code == 1
    revision = shards(stack, "id=txn-000")[0].mod_revision
    assert one_error_line(err).startswith(
        "error: consumer refused: ETCD_TRANSACTION_FAILED: transaction 2 of 2 refused: shard "
        f"txn-000: expected revision 0 (a new shard), but its current revision is {revision}; "
        "applied in 1 earlier transaction, at revision "), err
    assert sorted(s.spec.id for s in shards(stack, "id:prefix=txn-")) == [
        "txn-000", "txn-001", "txn-002"]


def test_watch_prints_the_listing_again_when_it_changes(stack: Stack, state_home: Path) -> None:
    ok("journals", "apply", input=log_journals("watched-000"))
    ok("shards", "apply", input=shard_yaml("watched-000"))
    env = {**isolated_env(state_home), "BROKER_ADDRESS": stack.brokers[0].endpoint,
           "CONSUMER_ADDRESS": stack.consumers[0].endpoint}
    with piped_gazctl("shards", "list", "--watch", "-l", "id=watched-000", "-o", "json",
                      env=env) as proc:
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())
        assert [s["spec"]["id"] for s in first["shards"]] == ["watched-000"]
        ok("shards", "apply", input=shard_yaml("watched-000", revision=-1,
                                               extra="  disable: true\n"))
        while not (listed := json.loads(proc.stdout.readline()))["shards"][0]["spec"]["disable"]:
            pass  # statuses may change first, as the shard is assigned
        assert list(listed) == ["status", "header", "shards", "extension"]
        assert stop(proc) == 130


def test_an_unreadable_specs_file_is_a_usage_error(
        stack: Stack, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_main(capsys, "shards", "apply", "--specs", "no/such/file.yaml")
    assert code == 2
    assert "--specs: cannot read 'no/such/file.yaml'" in one_error_line(err)


def test_consumer_address_from_flag_env_ini_then_the_active_stack(
        stack: Stack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("CONSUMER_ADDRESS")
    local_stack.up(stack.directory, timeout=60, activate=True)  # running already: activates
    assert ok("shards", "list", "-l", "id=chunks-part-000").stdout.startswith("ID")

    (tmp_path / "gazctl.ini").write_text(
        f"[shards.Consumer]\nAddress = {UNREACHABLE}\n[journals.Broker]\nAddress = "
        f"{stack.brokers[0].endpoint}\n")
    code, _, err = run_main(capsys, "shards", "list", "--timeout", "2s")
    assert code == 1 and f"cannot reach consumer at {UNREACHABLE}" in one_error_line(err)
    assert f"[shards.Consumer]\nAddress = {UNREACHABLE} ; from {tmp_path / 'gazctl.ini'}" \
        in ok("print-config").stdout

    monkeypatch.setenv("CONSUMER_ADDRESS", stack.consumers[1].endpoint)
    assert ok("shards", "list", "-l", "id=chunks-part-000").stdout.startswith("ID")
    code, _, err = run_main(capsys, "shards", "list", "--timeout", "2s",
                            "--consumer.address", UNREACHABLE)
    assert code == 1 and f"cannot reach consumer at {UNREACHABLE}" in one_error_line(err)


def test_every_command_dialing_consumers_takes_the_consumer_connection_options() -> None:
    dialing = {path: {p.name for p in cmd.params} for path, cmd in command_tree().items()
               if any(p.name == "consumer" for p in cmd.params)}
    assert {"gazctl shards list", "gazctl shards apply", "gazctl shards edit",
            "gazctl shards unassign"} <= set(dialing)
    assert [path for path, names in dialing.items() if not set(CONSUMER_SETTINGS) <= names] == []
    flags = {opt for p in command_tree()["gazctl shards list"].params for opt in p.opts}
    assert {"--consumer.address", "--consumer.cert-file", "--consumer.cert-key-file",
            "--consumer.trusted-ca-file", "--consumer.auth-keys", "--consumer.auth-token",
            "--broker.address", "--broker.auth-token"} <= flags


def test_200_shards_apply_by_default_in_as_few_transactions_as_etcd_takes(
        stack: Stack) -> None:
    # More changes than the 128 operations Etcd (at its default --max-txn-ops) takes in one
    # transaction: --max-txn-size 0 splits them to fit, in two. Disabled, so that no
    # consumer starts 200 replicas.
    ids = [f"many-{i:03d}" for i in range(200)]
    specs = "common:\n  disable: true\n  max_txn_duration: 1s\nshards:\n" + "".join(
        f"- id: {shard}\n  sources:\n  - journal: {CHUNKS}/part-000\n  revision: 0\n"
        for shard in ids)
    proc = subprocess.run([*GAZCTL, "shards", "apply"], input=specs.encode(),
                          capture_output=True, check=False, timeout=120)

    assert (proc.returncode, proc.stderr) == (0, b"")
    out = proc.stdout.decode().splitlines()
    assert out[-2] == "200 created, 0 changed, 0 unchanged, 0 deleted"
    listed = shards(stack, "id:prefix=many-")
    assert sorted(s.spec.id for s in listed) == ids
    first, last = sorted({s.mod_revision for s in listed})
    assert out[-1] == f"applied 200 change(s) at revision {last}"
    assert sum(s.mod_revision == first for s in listed) == 128
