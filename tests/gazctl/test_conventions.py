"""gazctl's conventions (docs/reference/conventions.md), checked on every command of the tree.

Exit codes: 0 done, 1 the operation failed, 2 the command line is wrong (nothing
was done), 3 a selector matched nothing to act on or nothing was done, 130
interrupted. A listing of nothing is no error.
`-o/--output` is always an output format; durations take Go durations or bare
seconds; every failure is one red line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gazette_core.local.stack import Stack
from tests.gazctl.support import (
    command_tree,
    journals,
    ok,
    one_error_line,
    run_main,
    running_stack,
    wait_primaries,
)

SPECS = """\
name: conv/
replication: 2
fragment:
  length: 1024
  compression_codec: NONE
  stores: [file:///]
  refresh_interval: 1s
  flush_interval: 1h
children:
  - name: conv/one
  - name: conv/spool
  - name: conv/two
"""
# The commands whose selector may be left out: they list every journal (shard) then.
OPTIONAL_SELECTOR = {"gazctl journals list", "gazctl journals fragments", "gazctl shards list"}
# The commands that list what matches: nothing matching is an empty listing (exit 0).
LISTING = {"gazctl journals list", "gazctl shards list"}
FORMAT_FLAGS = {"-o", "--output"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, state_home: Path) -> Iterator[Stack]:
    """Two brokers in two zones, so that zones have something to show."""
    with running_stack(tmp_path_factory.mktemp("stack"), brokers=2, zones=2) as s:
        yield s


@pytest.fixture(scope="module", autouse=True)
def conv_journals(address: str) -> None:
    ok("journals", "apply", "--broker.address", address, input=SPECS)
    wait_primaries(address, "prefix=conv/")
    ok("journals", "append", "-l", "name=conv/one", "--broker.address", address,
       input=b"hello\n")


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    code, out, err = run_main(capsys, "--version")

    assert (code, out, err) == (0, f"gazctl {version('gazette-py')}\n", "")


SELECTING = {path: cmd for path, cmd in command_tree().items()
             if any(p.name == "selector" for p in cmd.params)}


@pytest.mark.parametrize("path", sorted(set(SELECTING) - OPTIONAL_SELECTOR))
def test_a_missing_selector_is_a_usage_error_everywhere(
        path: str, address: str, capsys: pytest.CaptureFixture[str]) -> None:
    dials = any(p.name == "broker" for p in SELECTING[path].params)
    code, out, err = run_main(capsys, *path.split()[1:],
                              *(["--broker.address", address] if dials else []))

    assert code == 2 and out == ""
    assert "'-l' / '--selector'" in one_error_line(err)


def test_only_listing_commands_take_an_optional_selector() -> None:
    optional = {path for path, cmd in SELECTING.items()
                if not next(p for p in cmd.params if p.name == "selector").required}

    assert optional == OPTIONAL_SELECTOR


# Shards commands need consumers: tests/gazctl/test_shards_list_apply.py checks them.
@pytest.mark.parametrize("path", sorted(p for p in set(SELECTING) - LISTING
                                         if p.startswith("gazctl journals")))
def test_a_selector_matching_nothing_exits_3_everywhere_but_list(
        path: str, address: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    extra = ["-i", str(empty)] if path.endswith(" append") else []
    if path.endswith(" export"):
        extra = ["--to", str(tmp_path / "out")]

    code, out, err = run_main(capsys, *path.split()[1:], "-l", "name=conv/none", *extra,
                              "--broker.address", address)

    assert (code, out) == (3, "")
    assert one_error_line(err) == (
        "error: no journals match 'name=conv/none'")


def test_suspend_that_suspends_nothing_exits_3(address: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    # conv/one was written within its flush interval of an hour.
    code, out, err = run_main(capsys, "journals", "suspend", "-l", "name=conv/one",
                              "--broker.address", address)

    assert code == 3
    assert out == ("conv/one: not suspended: written within its flush interval "
                   "(--force suspends it)\n")
    assert one_error_line(err) == "error: no journal was suspended"


def _delete_ghost(address: str, capsys: pytest.CaptureFixture[str], tmp_path: Path,
                  revision: int) -> tuple[int, str, str]:
    """`journals apply` deleting journal conv/ghost, which does not exist, at `revision`."""
    specs = tmp_path / "ghost.yaml"
    specs.write_text(f"name: conv/ghost\ndelete: true\nrevision: {revision}\n")
    return run_main(capsys, "journals", "apply", "--specs", str(specs),
                    "--broker.address", address)


def test_deleting_a_journal_that_does_not_exist_deletes_nothing(
        address: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = _delete_ghost(address, capsys, tmp_path, revision=3)

    assert (code, err) == (0, "")
    assert out.splitlines() == ["delete conv/ghost: no such journal, nothing to delete",
                                "0 created, 0 changed, 0 unchanged, 0 deleted, 1 absent",
                                "nothing to apply"]


def test_deleting_an_unlisted_journal_at_any_revision_deletes_its_key_if_stored(
        address: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # A stored spec the brokers cannot use is not listed; -1 deletes it all the same.
    code, out, err = _delete_ghost(address, capsys, tmp_path, revision=-1)

    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[:2] == ["delete conv/ghost: not listed (no such journal, or its stored spec "
                         "is invalid); deleting its key if stored",
                         "0 created, 0 changed, 0 unchanged, 0 deleted, 1 absent"]
    assert lines[2].startswith("applied 1 change(s) at revision ")


def _format_options() -> dict[str, Any]:
    """The -o/--output option of every command whose -o is an output format."""
    with_format = {}
    for path, cmd in command_tree().items():
        for param in cmd.params:
            names = set(getattr(param, "opts", [])) | set(getattr(param, "secondary_opts", []))
            if names & FORMAT_FLAGS and not getattr(param, "hidden", False) and path != READ:
                with_format[path] = param
    return with_format


def _format_words() -> set[str]:
    """Every output format some command's -o takes."""
    return {str(c.value) for param in _format_options().values()
            for c in param.type_descriptor.annotation}


READ = "gazctl journals read"  # whose -o names a file, as in Go's gazctl


def test_output_format_is_o_output_on_every_command_that_has_one() -> None:
    with_format = _format_options()
    for path, param in with_format.items():
        assert param.name == "output", path
        assert set(param.opts) >= FORMAT_FLAGS, path
        choices = {str(c.value) for c in param.type_descriptor.annotation}
        assert choices >= {"table", "json"}, path
    assert set(with_format) == {"gazctl journals list", "gazctl journals fragments",
                                "gazctl journals prune", "gazctl local status",
                                "gazctl shards list", "gazctl shards prune",
                                "gazctl shards recover"}


def test_read_o_is_a_file_as_in_go() -> None:
    (param,) = [p for p in command_tree()[READ].params if p.name == "output"]

    assert (param.opts, param.default) == (["-o", "--output", "--output-file"], "-")


@pytest.mark.parametrize("word", [*sorted(_format_words()), "JSON"])
def test_read_refuses_a_file_named_like_an_output_format(
        word: str, address: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)

    code, out, err = run_main(capsys, "journals", "read", "-l", "name=conv/one", "-o", word,
                              "--broker.address", address)

    assert (code, out) == (2, "")
    assert one_error_line(err) == (
        f"error: invalid input: -o/--output: {word!r} is an output format of other commands, "
        "but journals read writes raw content to the file -o names; to write a file named "
        f"{word}, pass -o ./{word}")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("flag", ["-o", "--output", "--output-file"])
def test_read_writes_the_content_to_the_file_o_names(
        flag: str, address: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "out"

    code, out, err = run_main(capsys, "journals", "read", "-l", "name=conv/one",
                              flag, str(target), "--broker.address", address)

    assert (code, out, err) == (0, "", f"wrote 6 bytes to {target}\n")
    assert target.read_bytes() == b"hello\n"


def test_read_writes_a_file_named_like_a_format_given_as_a_path(
        address: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)

    code, out, err = run_main(capsys, "journals", "read", "-l", "name=conv/one",
                              "--output=./json", "--broker.address", address)

    assert (code, out, err) == (0, "", "wrote 6 bytes to ./json\n")
    assert (tmp_path / "json").read_bytes() == b"hello\n"


def test_read_o_dash_is_stdout(address: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(capsys, "journals", "read", "-l", "name=conv/one", "-o", "-",
                              "--broker.address", address)

    assert (code, out, err) == (0, "hello\n", "")


@pytest.mark.parametrize("args", [
    ["journals", "list", "-l", "name=conv/one", "--timeout", "2"],
    ["journals", "list", "-l", "name=conv/one", "--timeout", "1.5"],
    ["journals", "fragments", "-l", "name=conv/one", "--url-ttl", "2", "--timeout", "2s"],
    ["journals", "read", "-l", "name=conv/one", "--since", "3600", "--timeout", "2"],
], ids=lambda a: " ".join(a[1:2] + a[4:]))
def test_durations_take_bare_seconds_and_go_durations(
        args: list[str], address: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_main(capsys, *args, "--broker.address", address)

    assert (code, err) == (0, "")


DURATION_FLAGS = {"--timeout", "--url-ttl", "--since", "--broker.cache.ttl"}


def test_every_duration_flag_says_it_takes_seconds() -> None:
    """A new duration flag must be declared here, and parsed by timeflags.parse_duration."""
    found = {}
    for path, cmd in command_tree().items():
        for param in cmd.params:
            if "duration" in (getattr(param, "help", "") or "").lower():
                found[(path, param.opts[0])] = param.help
    assert {flag for _, flag in found} == DURATION_FLAGS
    assert [key for key, text in found.items() if "seconds" not in text] == []


@pytest.mark.parametrize("value", ["soon", "-1", "0"])
def test_a_bad_duration_is_a_usage_error(value: str, address: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(capsys, "journals", "list", "--timeout", value,
                              "--broker.address", address)

    assert (code, out) == (2, "")
    assert "--timeout" in one_error_line(err)


@pytest.mark.parametrize("path", sorted(command_tree()))
def test_an_unknown_flag_is_one_line_exiting_2_everywhere(
        path: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(capsys, *path.split()[1:], "--no-such-flag")

    assert (code, out) == (2, "")
    assert one_error_line(err) == (
        f"error: No such option: --no-such-flag (see `{path} --help`)")


def test_a_selector_is_always_l_or_selector() -> None:
    for path, cmd in SELECTING.items():
        param = next(p for p in cmd.params if p.name == "selector")
        assert sorted(param.opts) == ["--selector", "-l"], path


def test_list_replicas_show_each_members_zone(address: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(capsys, "journals", "list", "-l", "prefix=conv/", "-p", "-r",
                            "--broker.address", address)

    assert code == 0
    rows = [line.split(None, 2) for line in out.splitlines()[1:]]
    for name, primary, replicas in rows:
        # One broker per zone and R=2: the primary's zone is the other zone of the replica.
        assert primary.split("@")[1] in {"zone-a", "zone-b"}, (name, primary)
        assert replicas.split("@")[1] in {"zone-a", "zone-b"} - {primary.split("@")[1]}


def test_local_status_shows_each_brokers_zone(stack: Stack,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(capsys, "local", "status", "--dir", str(stack.directory),
                            "-o", "json")

    assert code == 0
    zones = {row["name"]: row["zone"] for row in json.loads(out)}
    assert zones == {"etcd": "", "broker-1": "zone-a", "broker-2": "zone-b"}
    code, out, _ = run_main(capsys, "local", "status", "--dir", str(stack.directory))
    assert out.splitlines()[0].split() == ["Role", "Name", "Zone", "PID", "Endpoint", "HTTP",
                                           "Alive"]


def test_print_config_takes_the_broker_address(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(capsys, "print-config", "--broker.address",
                              "http://127.0.0.1:9")

    assert (code, err) == (0, "")
    assert "Address = http://127.0.0.1:9 ; from --broker.address" in out.splitlines()


def test_fragments_table_names_each_fragments_store(address: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    ok("journals", "append", "-l", "name=conv/spool", "--broker.address", address,
       input=b"spooled\n")

    code, out, _ = run_main(capsys, "journals", "fragments", "-l", "name=conv/spool",
                            "--broker.address", address)

    assert code == 0
    header, *rows = out.splitlines()
    assert header.split()[-1] == "Store"
    # The only fragment is the open spool, which no store holds yet.
    assert [row.split()[-1] for row in rows] == ["<unpersisted>"]


def test_reading_from_past_the_write_head_warns(
        address: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    offsets = tmp_path / "offsets.json"
    offsets.write_text(json.dumps({"conv/one": 1000, "conv/two": 0}))

    code, out, err = run_main(capsys, "journals", "read", "-l", "name in (conv/one, conv/two)",
                              "--offsets", str(offsets), "--broker.address", address)

    assert (code, out) == (0, "")
    assert err == ("warning: conv/one starts at offset 1000, past its write head 6; "
                   "nothing is read from it until it grows past 1000\n")
    assert [j.spec.name for j in journals(address, "prefix=conv/")] == [
        "conv/one", "conv/spool", "conv/two"]
