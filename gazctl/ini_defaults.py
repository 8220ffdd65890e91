"""gazctl.ini defaults of subcommand options, as Go's gazctl reads them (`[journals.list]`).

A subcommand's section is its path (`journals.list`, `shards.apply`,
`attach-uuids`; any case), and each key names one of its options by the long
name (`format`, `label-columns`), the short name (`o`, `L`; case counts) or
Go's field name (`Format`, `Labels`, `SpecsPath`). The value is used when
neither the flag nor an environment variable gives one (click's default_map).
A bool option is set by `true` or an empty value, and cleared by `false`. As
in Go, an edit command's `--selector` cannot come from the file, and a
group's options belong in the group's sections (`[journals.Broker]`, ...),
not a subcommand's; such keys are reported, as unknown ones are.
"""

from __future__ import annotations

from typing import Any

from typer._click.core import Command
from typer.core import TyperOption as Option

from gazctl import logs
from gazctl.connection import ALL_SETTINGS
from gazctl.ini import IniFile

# Go's field names that are not their option's long name, and that option.
GO_FIELDS = {"labels": "--label-columns", "specspath": "--specs", "offsetspath": "--offsets",
             "offsetsoutpath": "--offsets-out", "fromunix": "--from", "tounix": "--to",
             "sigttl": "--url-ttl"}
NO_INI = {("journals", "edit", "selector"), ("shards", "edit", "selector")}
GROUP_OPTIONS = {*ALL_SETTINGS, "broker", "consumer"}


def default_map(root: Command, ini: IniFile) -> dict[str, Any]:
    """click's default_map of every subcommand section of `ini`; unknown keys are reported."""
    out: dict[str, Any] = {}
    for section, items in ini.commands.items():
        path = section.lower().split(".")
        command = _find(root, path)
        if command is None:
            logs.warn(f"{ini.path}: ignoring unknown section [{section}]")
            continue
        defaults = _nested(out, path)
        for key, value in items:
            param = _param_of(command, key)
            if param is None:
                logs.warn(f"{ini.path}: ignoring unknown key {key!r} in [{section}]")
                continue
            if why := _refused(path, str(param.name)):
                logs.warn(f"{ini.path}: ignoring {key!r} in [{section}]: {why}")
                continue
            defaults[str(param.name)] = _value(param, value)
    return out


def _refused(path: list[str], name: str) -> str:
    """Why an option of the subcommand may not be set in its section, or ''."""
    if name in GROUP_OPTIONS:
        return (f"an option of the {path[0]} group belongs in its sections ([{path[0]}], "
                f"[{path[0]}.Broker], ...)")
    if (*path, name) in NO_INI:
        return "an edit's selector is never read from gazctl.ini, as in Go's gazctl"
    return ""


def _find(root: Command, path: list[str]) -> Command | None:
    command: Command | None = root
    for name in path:
        commands = getattr(command, "commands", None)
        command = commands.get(name) if commands else None
    return None if command is None or hasattr(command, "commands") else command


def _nested(out: dict[str, Any], path: list[str]) -> dict[str, Any]:
    for name in path:
        out = out.setdefault(name, {})
    return out


def _norm(name: str) -> str:
    return name.lower().lstrip("-").replace("-", "").replace("_", "").replace(".", "")


def _param_of(command: Command, key: str) -> Option | None:
    """The option `key` names: short name (exact), long name or Go field name."""
    long = _norm(key)
    for param in command.params:
        if not isinstance(param, Option):
            continue
        names = [*param.opts, *param.secondary_opts]
        if (f"-{key}" in names or long in {_norm(n) for n in names if n.startswith("--")}
                or GO_FIELDS.get(long) in names):
            return param
    return None


def _value(param: Option, text: str) -> Any:
    if param.is_flag and not text.strip():
        return True  # go-flags sets a bool option given with no value
    return [text] if param.multiple else text
