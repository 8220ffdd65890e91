"""Running one gazctl option in each way Go's gazctl takes it: helpers of the Go-spelling tables.

Go's gazctl (go-flags) takes an option as `--name value`, `--name=value`,
`-n value`, `-n=value` or `-nvalue`; a group's option (`--zone`, `--log.*`,
`--broker.*`, `--consumer.*`) before the subcommand as well as after it and
from its environment variable; and any option from gazctl.ini, keyed by Go's
field name or the long name, in the section of its command (`[journals.list]`)
or group (`[journals.Broker]`). `run_spelled` runs a command with one option
given in one of these ways, in a working directory of its own so that a
gazctl.ini written there is the one read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from typer.testing import Result

from gazctl.connection import ALL_SETTINGS
from tests.gazctl.support import cli

# Every environment variable of a group option, and gazctl's own that could reach a command.
GROUP_ENV = [env for _, env, _, _ in ALL_SETTINGS.values()] + [
    "BROKER_ADDRESS", "CONSUMER_ADDRESS", "GAZCTL_TIMEOUT", "BROKER_FILE_ROOT"]
GROUP_SPELLINGS = ("after", "after=", "before", "before=", "env", "ini-field", "ini-long")


@dataclass(frozen=True)
class Option:
    """One option given one value, where Go's gazctl.ini keeps it, and how to run it."""

    flag: str  # the long flag, e.g. --broker.cache.size
    value: str
    section: str  # its gazctl.ini section, e.g. journals.Broker
    field: str  # Go's field name there, e.g. Size
    short: str = ""  # e.g. -o
    env: str = ""  # its environment variable, for group options
    is_flag: bool = False  # a bool option: given by its name alone (`value` is for the file)


@dataclass(frozen=True)
class Case:
    """A command run with an option, the environment it needs, and what shows the effect."""

    name: str
    option: Option
    command: Sequence[str]  # e.g. ("journals", "list", "-l", "x"); [0] is the group
    expect: Callable[[Result], None]
    env: dict[str, str] = field(default_factory=dict)
    input: bytes | None = None


def argv(case: Case, spelling: str) -> list[str]:
    """The command line of `case` with its option spelled `spelling` (or not at all)."""
    opt, (group, *rest) = case.option, case.command
    if opt.is_flag:
        return {"after": [group, *rest, opt.flag], "short": [group, *rest, opt.short]
                }.get(spelling, [group, *rest])
    return {
        "after": [group, *rest, opt.flag, opt.value],
        "after=": [group, *rest, f"{opt.flag}={opt.value}"],
        "before": [group, opt.flag, opt.value, *rest],
        "before=": [group, f"{opt.flag}={opt.value}", *rest],
        "short": [group, *rest, opt.short, opt.value],
        "short=": [group, *rest, f"{opt.short}={opt.value}"],
        "short-attached": [group, *rest, f"{opt.short}{opt.value}"],
    }.get(spelling, [group, *rest])


def ini_text(case: Case, spelling: str) -> str:
    opt = case.option
    if spelling == "ini-empty":  # go-flags sets a bool option given no value
        return f"[{opt.section}]\n{opt.field} =\n"
    key = {"ini-field": opt.field, "ini-long": opt.flag.lstrip("-"),
           "ini-short": opt.short.lstrip("-")}.get(spelling)
    return f"[{opt.section}]\n{key} = {opt.value}\n" if key else ""


def run_spelled(case: Case, spelling: str, monkeypatch: pytest.MonkeyPatch,
                cwd: Path) -> Result:
    """Run `case` with its option spelled `spelling`, from `cwd`, in a clean environment."""
    with monkeypatch.context() as mp:
        for name in GROUP_ENV:
            mp.delenv(name, raising=False)
        for name, value in case.env.items():
            mp.setenv(name, value)
        if spelling == "env":
            mp.setenv(case.option.env, case.option.value)
        cwd.mkdir(parents=True, exist_ok=True)
        (cwd / "gazctl.ini").write_text(ini_text(case, spelling))
        mp.chdir(cwd)
        mp.setenv("XDG_CONFIG_HOME", str(cwd / "no-config"))
        return cli(*argv(case, spelling), input=case.input)


def check_spellings(case: Case, spellings: Sequence[str], monkeypatch: pytest.MonkeyPatch,
                    tmp_path: Path) -> None:
    """Run `case` in every one of `spellings` and check its effect each time."""
    for i, spelling in enumerate(spellings):
        result = run_spelled(case, spelling, monkeypatch, tmp_path / str(i))
        try:
            case.expect(result)
        except AssertionError as exc:
            raise AssertionError(
                f"{case.name}: {spelling}: {argv(case, spelling)} "
                f"ini {ini_text(case, spelling)!r}: exit {result.exit_code}, "
                f"{result.exception!r}\nstdout: {result.stdout}\nstderr: {result.stderr}"
            ) from exc



def failed_with(text: str) -> Callable[[Result], None]:
    """The command failed, its error saying `text`."""
    def check(result: Result) -> None:
        assert result.exit_code != 0 and text in str(result.exception)
    return check


def said(text: str, then: Callable[[Result], None] | None = None) -> Callable[[Result], None]:
    """stderr has `text` (and `then` holds too)."""
    def check(result: Result) -> None:
        assert text in result.stderr
        if then is not None:
            then(result)
    return check


def printed(*texts: str, absent: Sequence[str] = ()) -> Callable[[Result], None]:
    """The command succeeded; stdout has every one of `texts` and none of `absent`."""
    def check(result: Result) -> None:
        assert result.exit_code == 0, result.exception
        assert all(t in result.stdout for t in texts), texts
        assert not any(t in result.stdout for t in absent), absent
    return check


def usage_error(text: str) -> Callable[[Result], None]:
    """click refused the command line (exit 2), saying `text`."""
    def check(result: Result) -> None:
        assert result.exit_code == 2 and text in result.stderr
    return check
