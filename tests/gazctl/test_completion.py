"""Shell completion: the scripts Typer installs for gazctl, and what they complete.

The scripts and the completion variable (_GAZCTL_COMPLETE) are named after the
program, so these tests run the `gazctl` console script that `make install`
puts next to the interpreter (`python -m gazctl.main` would be named
"python -m gazctl.main"). Completion requests are made the way the installed
scripts make them: bash passes COMP_WORDS and COMP_CWORD, fish the command line
in _TYPER_COMPLETE_ARGS. Selector values are completed from a real broker.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer

from gazctl.cli import app
from gazctl.completion import clause_completions
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.testing.etcd import free_port
from tests.gazctl.support import isolated_env
from tests.gazctl.test_journals_append_read import create_journals

GAZCTL = Path(sys.executable).parent / "gazctl"
JOURNALS = ["cmp/one", "cmp/sub/three", "cmp/two"]


@pytest.fixture(scope="module")
def gazctl_bin() -> Path:
    if not GAZCTL.is_file():
        pytest.fail(f"no gazctl console script at {GAZCTL}: run `make install`")
    return GAZCTL


@pytest.fixture
def env(state_home: Path, tmp_path: Path) -> dict[str, str]:
    """No broker address, the state directory isolated, and an empty home directory."""
    home = tmp_path / "home"
    home.mkdir()
    return {**isolated_env(state_home), "HOME": str(home)}


def under_bash(gazctl: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run gazctl as a child of bash, so that Typer detects bash as the user's shell."""
    # Not `exec`: bash must stay gazctl's parent process.
    script = '"$@"; exit $?'
    return subprocess.run(["bash", "--norc", "--noprofile", "-c", script, "bash", str(gazctl),
                           *args], env=env, capture_output=True, text=True, timeout=60,
                          check=False)


def complete_bash(gazctl: Path, words: list[str], env: dict[str, str]) -> list[str]:
    """What the bash script asks for when TAB is pressed after `words` (the last is the
    word being completed, split as bash splits it)."""
    request = {**env, "_GAZCTL_COMPLETE": "complete_bash", "COMP_WORDS": "\n".join(words),
               "COMP_CWORD": str(len(words) - 1)}
    proc = subprocess.run([str(gazctl)], env=request, capture_output=True, text=True,
                          timeout=60, check=False)
    assert (proc.returncode, proc.stderr) == (0, ""), proc
    return [line for line in proc.stdout.splitlines() if line]  # none is an empty line


def complete_fish(gazctl: Path, line: str, env: dict[str, str]) -> list[str]:
    """What the fish script asks for when TAB is pressed at the end of `line`."""
    request = {**env, "_GAZCTL_COMPLETE": "complete_fish", "_TYPER_COMPLETE_ARGS": line,
               "_TYPER_COMPLETE_FISH_ACTION": "get-args"}
    proc = subprocess.run([str(gazctl)], env=request, capture_output=True, text=True,
                          timeout=60, check=False)
    assert (proc.returncode, proc.stderr) == (0, ""), proc
    return [line for line in proc.stdout.splitlines() if line]  # none is an empty line


def test_show_completion_prints_the_bash_script(gazctl_bin: Path, env: dict[str, str]) -> None:
    proc = under_bash(gazctl_bin, "--show-completion", env=env)

    assert proc.returncode == 0, proc
    assert "_GAZCTL_COMPLETE=complete_bash" in proc.stdout
    assert "complete -o default -F _gazctl_completion gazctl" in proc.stdout


def test_bash_completes_commands_and_options(gazctl_bin: Path, env: dict[str, str]) -> None:
    root: Any = typer.main.get_command(app)
    local = sorted(root.commands["local"].commands)

    assert complete_bash(gazctl_bin, ["gazctl", "jou"], env) == ["journals"]
    journals = complete_bash(gazctl_bin, ["gazctl", "journals", "re"], env)
    assert {"read", "reset-head"} <= set(journals)
    assert [word for word in journals if not word.startswith("re")] == []
    assert sorted(complete_bash(gazctl_bin, ["gazctl", "local", ""], env)) == local
    assert complete_bash(gazctl_bin, ["gazctl", "journals", "read", "--sel"], env) == [
        "--selector"]


def test_install_completion_writes_the_script_and_sources_it_from_bashrc(
        gazctl_bin: Path, env: dict[str, str]) -> None:
    home = Path(env["HOME"])
    script = home / ".bash_completions" / "gazctl.sh"

    proc = under_bash(gazctl_bin, "--install-completion", env=env)

    assert proc.returncode == 0, proc
    assert f"bash completion installed in {script}" in proc.stdout
    assert "_GAZCTL_COMPLETE=complete_bash" in script.read_text()
    assert f"source '{script}'" in (home / ".bashrc").read_text().splitlines()
    # A new shell reading ~/.bashrc completes through the installed function.
    shell = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c",
         'source ~/.bashrc; COMP_WORDS=(gazctl journals re); COMP_CWORD=2; '
         '_gazctl_completion gazctl; printf "%s\\n" "${COMPREPLY[@]}"'],
        env={**env, "PATH": f"{gazctl_bin.parent}:{env['PATH']}"}, capture_output=True,
        text=True, timeout=60, check=False)
    assert {"read", "reset-head"} <= set(shell.stdout.split()), shell


@pytest.fixture(scope="module")
def broker_env(address: str, state_home: Path) -> dict[str, str]:
    """Journals to complete, and an environment pointing gazctl at their broker."""
    create_journals(address, "cmp", JOURNALS)
    return {**isolated_env(state_home), "BROKER_ADDRESS": address}


@pytest.mark.parametrize(("selector", "expected"), [
    ("name=cmp/", ["name=cmp/one", "name=cmp/sub/three", "name=cmp/two"]),
    ("name=cmp/t", ["name=cmp/two"]),
    ("na", ["name=cmp/one", "name=cmp/sub/three", "name=cmp/two"]),
    ("su", ["suite="]),  # create_journals labels every journal suite=rw
    ("suite=", ["suite=rw"]),
    ("suite!=", ["suite!=rw"]),
    ("name:prefix=cmp/s", ["name:prefix=cmp/sub/", "name:prefix=cmp/sub/three"]),
    ("suite=rw,name=cmp/o", ["suite=rw,name=cmp/one"]),
    ("zzz", []),
])
def test_selector_values_come_from_the_broker(
        selector: str, expected: list[str], gazctl_bin: Path, broker_env: dict[str, str]) -> None:
    line = f"gazctl journals read -l {selector}"

    assert sorted(complete_fish(gazctl_bin, line, broker_env)) == expected


def test_empty_selector_offers_every_journal_and_label_name(
        gazctl_bin: Path, broker_env: dict[str, str]) -> None:
    got = complete_fish(gazctl_bin, "gazctl journals list -l ", broker_env)

    assert sorted(got) == [*(f"name={name}" for name in JOURNALS), "suite="]


def test_bash_completes_a_quoted_selector_from_the_typed_broker_address(
        gazctl_bin: Path, address: str, broker_env: dict[str, str], state_home: Path) -> None:
    # Bash splits words at "=", so a selector is completed inside quotes, and
    # COMP_WORDS holds the opening quote. The address comes from the command line.
    words = ["gazctl", "journals", "append", "--broker.address", address, "-l", "'name=cmp/o"]

    assert complete_bash(gazctl_bin, words, isolated_env(state_home)) == ["name=cmp/one"]


def test_unreachable_broker_means_no_suggestions_and_no_error(
        gazctl_bin: Path, env: dict[str, str]) -> None:
    line = f"gazctl journals read --broker.address http://127.0.0.1:{free_port()} -l name="

    # complete_fish checks that the exit code is 0 and stderr is empty.
    assert complete_fish(gazctl_bin, line, env) == []
    assert complete_fish(gazctl_bin, "gazctl journals read --broker.address ftp://x -l ",
                         env) == []


def test_clauses_complete_exclusions_prefixes_and_label_names() -> None:
    specs = [pb.JournalSpec(name="a/b/c", labels=pb.LabelSet(labels=[
        pb.Label(name="app", value="clicks"), pb.Label(name="app", value="views")]))]

    assert clause_completions("", specs) == ["name=a/b/c", "app="]
    assert clause_completions("app!=", specs) == ["app!=clicks", "app!=views"]
    assert clause_completions("prefix=", specs) == ["prefix=a/", "prefix=a/b/", "prefix=a/b/c"]
