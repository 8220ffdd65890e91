"""Every Go flag of `gazctl journals ...` and `gazctl attach-uuids`, in each of Go's spellings.

go-flags takes an option as `--name value`, `--name=value`, `-n value`,
`-n=value` or `-nvalue`, and from gazctl.ini in its command's section
(`[journals.list]`) under Go's field name (`Labels`), the long name
(`label-columns`) or the short one (`L`); a bool option by its name alone,
or `Name = true` (or empty) in the file. Each row gives one flag of one
command in all these ways (go_spellings.py) against a real broker and checks
its effect each time. The blocking flags (`read -b`, `list --watch`) are
checked in subprocesses: the command keeps running until interrupted.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import IO, Any

import pytest
from typer.testing import Result

from tests.gazctl.go_spellings import (
    GROUP_ENV,
    Case,
    Option,
    argv,
    check_spellings,
    failed_with,
    ini_text,
    printed,
    said,
    usage_error,
)
from tests.gazctl.support import GAZCTL, content, isolated_env, ok, stop, wait_primaries
from tests.gazctl.test_journals_prune import APPENDS, child, populate, tree

P = "goflags"
CONTENT = b"".join(APPENDS)  # 0-800 and 800-2400 persisted, 2400-3200 in the spool
FUTURE = "4102444800"  # 2100-01-01: every persisted fragment is older


def value_spellings(option: Option) -> list[str]:
    shorts = ["short", "short=", "short-attached", "ini-short"] if option.short else []
    return ["after", "after=", *shorts, "ini-field", "ini-long"]


def flag_spellings(option: Option) -> list[str]:
    """A bool option: its name alone, or `true` (or nothing) in gazctl.ini."""
    return ["after", *(["short"] if option.short else []), "ini-field", "ini-empty", "ini-long"]


def flag(name: str, section: str, field: str, short: str = "") -> Option:
    """A bool option: `value` is what gazctl.ini sets it with."""
    return Option(name, "true", section, field, short, is_flag=True)


@pytest.fixture(scope="module")
def files(address: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Journals goflags/a (persisted and spooled content), /b (empty) and /c (appended to),
    and the input files rows name."""
    populate(address, P, [child(P, "a"), child(P, "b"), child(P, "c"), child(P, "d")], ["a"])
    wait_primaries(address, f"suite={P}")
    directory = tmp_path_factory.mktemp("inputs")
    (directory / "input.txt").write_bytes(b"seven!\n")
    (directory / "offsets.json").write_text(json.dumps({f"{P}/a": 2400}))
    (directory / "empty-root").mkdir()
    (directory / "specs.yaml").write_text(
        f"name: {P}/\nreplication: 1\nlabels:\n  - {{name: suite, value: {P}}}\nfragment:\n"
        "  length: 1024\n  compression_codec: NONE\n  stores: [file:///]\n"
        f"  refresh_interval: 1s\nchildren:\n  - name: {P}/m1\n    revision: 0\n"
        f"  - name: {P}/m2\n    revision: 999\n")
    (directory / "specs-ok.yaml").write_text(tree(P, "".join(
        f"  - name: {P}/{name}\n    revision: -1\n" for name in "abcd")))
    return directory



def _content(expected: bytes) -> Any:
    def check(result: Result) -> None:
        assert (result.exit_code, result.stdout_bytes) == (0, expected), result.exception
    return check



def _offsets_written(path: Path) -> Any:
    def check(result: Result) -> None:
        assert result.exit_code == 0 and json.loads(path.read_text()) == {f"{P}/a": 3200}
        path.unlink()
    return check


def cases(address: str, files: Path) -> dict[str, tuple[Case, list[str]]]:
    """Each row: the case and the spellings it is run in."""
    env = {"BROKER_ADDRESS": address}
    a = ("-l", f"name={P}/a")
    rows: list[tuple[Case, list[str]]] = []

    def row(name: str, option: Option, command: tuple[str, ...], expect: Any,
            input: bytes | None = None, extra_env: dict[str, str] | None = None) -> None:
        spellings = (flag_spellings if option.is_flag else value_spellings)(option)
        rows.append((Case(name, option, command, expect, {**env, **(extra_env or {})}, input),
                     spellings))

    listed = ("journals", "list", "-l", f"suite={P}")
    row("list selector", Option("--selector", f"name={P}/b", "journals.list", "Selector", "-l"),
        ("journals", "list"), printed(f"{P}/b", absent=(f"{P}/a",)))
    row("list format", Option("--format", "yaml", "journals.list", "Format", "-o"), listed,
        printed(f"name: {P}/", "children:"))
    row("list label columns", Option("--label-columns", "suite", "journals.list", "Labels",
                                     "-L"), listed, printed("suite", P))
    row("list primary", flag("--primary", "journals.list", "Primary", "-p"), listed,
        printed("Primary"))
    row("list replicas", flag("--replicas", "journals.list", "Replicas", "-r"), listed,
        printed("Replicas"))
    row("list rf", flag("--rf", "journals.list", "RF"), listed, printed("RF"))
    row("list stores", flag("--stores", "journals.list", "Stores"), listed,
        printed("Stores", "file:///"))

    frags = ("journals", "fragments", *a)
    row("fragments selector", Option("--selector", f"name={P}/b", "journals.fragments",
                                     "Selector", "-l"), ("journals", "fragments"),
        printed("Journal", absent=(f"{P}/a",)))
    row("fragments format", Option("--format", "json", "journals.fragments", "Format", "-o"),
        frags, printed('"journal":"goflags/a"', absent=("Journal",)))
    row("fragments proto format", Option("--format", "proto", "journals.fragments", "Format",
                                         "-o"), frags, printed('journal: "goflags/a"'))
    row("fragments from", Option("--from", FUTURE, "journals.fragments", "FromUnix"), frags,
        printed("<unpersisted>", absent=("file:///",)))
    row("fragments to", Option("--to", "1", "journals.fragments", "ToUnix"), frags,
        printed("Journal", absent=(f"{P}/a",)))
    row("fragments url ttl", Option("--url-ttl", "1h", "journals.fragments", "SigTTL"), frags,
        printed("URL", "file:///"))

    read = ("journals", "read", *a)
    row("read selector", Option("--selector", f"name={P}/a", "journals.read", "Selector", "-l"),
        ("journals", "read"), _content(CONTENT))
    row("read tail", flag("--tail", "journals.read", "Tail"), read, _content(b""))
    row("read output", Option("--output", "out.bin", "journals.read", "Output", "-o"), read,
        said(f"wrote {len(CONTENT)} bytes to out.bin", _content(b"")))
    row("read offsets", Option("--offsets", str(files / "offsets.json"), "journals.read",
                               "OffsetsPath"), read, _content(CONTENT[2400:]))
    row("read offsets out", Option("--offsets-out", str(files / "out.json"), "journals.read",
                                   "OffsetsOutPath"), read, _offsets_written(files / "out.json"))
    row("read file root", Option("--file-root", str(files / "empty-root"), "journals.read",
                                 "FileRoot"), read,
        said("; reading it through the broker", _content(CONTENT)))
    row("read from", Option("--from", FUTURE, "journals.read", "FromUnix"), read,
        _content(CONTENT[2400:]))

    append = ("journals", "append", "-l", f"name={P}/c")
    row("append selector", Option("--selector", f"name={P}/c", "journals.append", "Selector",
                                  "-l"), ("journals", "append"),
        printed(f"appended 4 bytes to {P}/c"), b"x\ny\n")
    row("append input", Option("--input", str(files / "input.txt"), "journals.append", "Input",
                               "-i"), append, printed(f"appended 7 bytes to {P}/c"))
    row("append framing", Option("--framing", "lines", "journals.append", "Framing", "-f"),
        append, printed("appended 3 record(s)"), b"x\ny\nz\n")
    row("append mapping", Option("--mapping", "modulo", "journals.append", "Mapping", "-m"),
        (*append, "-f", "lines"), printed("appended 2 record(s)"), b"k1\nr1\nk2\nr2\n")
    row("append base64", flag("--base64", "journals.append", "Base64"),
        (*append, "-f", "lines", "-m", "modulo"), failed_with("key b'!!' is not base64"),
        b"!!\nr1\n")

    apply = ("journals", "apply")
    row("apply specs", Option("--specs", str(files / "specs-ok.yaml"), "journals.apply",
                              "SpecsPath"), (*apply, "--dry-run"), printed("4 unchanged"))
    row("apply dry run", flag("--dry-run", "journals.apply", "DryRun"),
        (*apply, "--specs", str(files / "specs-ok.yaml")), printed("dry run: 0 change(s)"))
    row("apply max txn size", Option("--max-txn-size", "1", "journals.apply", "MaxTxnSize"),
        (*apply, "--specs", str(files / "specs.yaml")), failed_with(" of 2 refused"))
    row("edit max txn size", Option("--max-txn-size", "-1", "journals.edit", "MaxTxnSize"),
        ("journals", "edit", *a), usage_error("Invalid value for '--max-txn-size'"))

    row("prune selector", Option("--selector", f"name={P}/a", "journals.prune", "Selector",
                                 "-l"), ("journals", "prune", "--dry-run", "-o", "json"),
        printed('"journals":1'))
    row("prune dry run", flag("--dry-run", "journals.prune", "DryRun"),
        ("journals", "prune", *a, "-o", "json"), printed('"dry_run":true'))
    row("reset-head selector", Option("--selector", f"name={P}/a", "journals.reset-head",
                                      "Selector", "-l"), ("journals", "reset-head"),
        printed(f"{P}/a: write head at {len(CONTENT)}"))
    row("suspend selector", Option("--selector", f"name={P}/b", "journals.suspend", "Selector",
                                   "-l"), ("journals", "suspend"), printed(f"{P}/b: "))
    row("suspend force", flag("--force", "journals.suspend", "Force", "-f"),
        ("journals", "suspend", "-l", f"name={P}/d"), _suspended_then_resumed(address))
    row("store-health check delete prefix",
        Option("--check-delete-prefix", "probe", "journals.store-health", "CheckDeletePrefix"),
        ("journals", "store-health", "file:///"), failed_with('"probe" must end in "/"'))

    uuids = ("attach-uuids",)
    row("attach-uuids template", Option("--template", "{{.Line}}!", "attach-uuids", "Template"),
        uuids, _content(b"a!\nb!\n"), b"a\nb\n")
    row("attach-uuids max length", Option("--max-length", "1", "attach-uuids", "MaxLength"),
        uuids, failed_with("stdin line 1 is 2 bytes, over 1"), b"aa\n")
    row("attach-uuids skip header", flag("--skip-header", "attach-uuids", "SkipHeader"),
        (*uuids, "--template", "{{.Line}}"), _content(b"b\n"), b"a\nb\n")
    return {case.name: (case, spellings) for case, spellings in rows}


def _suspended_then_resumed(address: str) -> Any:
    """goflags/d, with fresh content, was suspended anyway; append again to resume it."""
    def check(result: Result) -> None:
        assert result.exit_code == 0 and f"{P}/d: suspended" in result.stdout, result.exception
        ok("journals", "append", "-l", f"name={P}/d", "--broker.address", address, input=b"x")
    return check


NAMES = list(cases("http://x:1", Path("/x")))


@pytest.fixture
def resumed_d(address: str, files: Path) -> None:
    ok("journals", "append", "-l", f"name={P}/d", "--broker.address", address, input=b"x")


@pytest.mark.parametrize("name", NAMES)
def test_flag_in_every_go_spelling(name: str, address: str, files: Path, resumed_d: None,
                                   monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    case, spellings = cases(address, files)[name]
    check_spellings(case, spellings, monkeypatch, tmp_path)


def test_edit_selector_is_never_read_from_gazctl_ini(
        address: str, files: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """As in Go (`no-ini`): the file's selector is reported and not used."""
    case = Case("edit selector", Option("--selector", f"name={P}/a", "journals.edit",
                                        "Selector", "-l"), ("journals", "edit"),
                printed("Cancelled; nothing to do."), {"BROKER_ADDRESS": address,
                                                       "GAZ_EDITOR": "true"})
    check_spellings(case, ["after", "after=", "short", "short=", "short-attached"],
                    monkeypatch, tmp_path)
    refused = Case(case.name, case.option, case.command, said(
        "ignoring 'Selector' in [journals.edit]: an edit's selector is never read from "
        "gazctl.ini", failed_with("")), case.env)
    check_spellings(refused, ["ini-field"], monkeypatch, tmp_path / "ini")


def _follows_appends(address: str, out: IO[bytes], round: int) -> bool:
    """A blocking read printed the content, then prints what is appended after."""
    head, more = content(address, f"{P}/a"), f"more {round}\n".encode()
    assert out.read(len(head)) == head
    ok("journals", "append", "-l", f"name={P}/a", "--broker.address", address, input=more)
    return out.read(len(more)) == more


def _relists_changes(address: str, out: IO[bytes], round: int) -> bool:
    """A watching list printed the journal, then prints it again when its spec changes."""
    assert out.readline().startswith(b"Name") and out.readline().startswith(f"{P}/b".encode())
    ok("journals", "apply", "--broker.address", address, input=(
        f"name: {P}/b\nrevision: -1\nreplication: 1\nlabels:\n  - {{name: suite, value: {P}}}\n"
        f"  - {{name: watched, value: '{round}'}}\nfragment:\n  length: 1024\n"
        "  compression_codec: NONE\n  stores: [file:///]\n  refresh_interval: 1s\n"))
    return out.readline().startswith(b"Name") and out.readline().startswith(f"{P}/b".encode())


@pytest.mark.parametrize(("command", "option", "follows"), [
    (("journals", "read", "-l", f"name={P}/a"), flag("--block", "journals.read", "Block", "-b"),
     _follows_appends),
    (("journals", "list", "-l", f"name={P}/b"), flag("--watch", "journals.list", "Watch"),
     _relists_changes),
])
def test_blocking_flags_in_every_go_spelling(command: tuple[str, ...], option: Option,
                                             follows: Any, address: str, files: Path,
                                             state_home: Path, tmp_path: Path) -> None:
    """The command prints, then what changes after, until interrupted (exit 130)."""
    case = Case(option.flag, option, command, lambda result: None)
    for round, spelling in enumerate(flag_spellings(option)):
        cwd = tmp_path / spelling
        cwd.mkdir()
        (cwd / "gazctl.ini").write_text(ini_text(case, spelling))
        env = {k: v for k, v in isolated_env(state_home).items() if k not in GROUP_ENV}
        env |= {"BROKER_ADDRESS": address, "XDG_CONFIG_HOME": str(cwd / "none")}
        proc = subprocess.Popen([*GAZCTL, *argv(case, spelling)], cwd=cwd, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdout is not None
        try:
            assert follows(address, proc.stdout, round), spelling
        finally:
            assert stop(proc) == 130, spelling
