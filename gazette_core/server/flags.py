"""Command-line flags of server processes, each falling back to its environment variable.

Brokers (`gazette serve`) and consumers (`gazette consumer`) describe their
flags as (flag, field, type, environment variable, help) rows; this module
turns such a table into a parsed config dataclass.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable
from dataclasses import fields
from typing import Any, NoReturn, TypeVar

C = TypeVar("C")

# (flag, field, type, environment variable, help); type `list`: a repeatable string flag.
Flag = tuple[str, str, type, str, str]
# What is wrong with a flag's value, or None when it is fine.
Check = Callable[[Any], str | None]


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr and exit status 2."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def parse_flags(prog: str, description: str, flags: list[Flag], config: type[C],
                argv: list[str], positive: frozenset[str] = frozenset(),
                checks: dict[str, Check] | None = None) -> C:
    """Parse `argv` into a `config`; fields named in `positive` must be > 0.

    Each of `checks` (by field) vets its flag's value; a problem is a usage
    error naming the flag and the value (exit status 2), before anything runs.
    """
    defaults: Any = config()
    parser = _Parser(prog=prog, description=description)
    repeated: dict[str, list[str]] = {}
    for flag, name, kind, env, text in flags:
        help_text = f"{text} [${env}] (default {getattr(defaults, name)!r})"
        if kind is list:
            # As in Go, values given on the command line replace the environment's.
            repeated[name] = env_list(env, getattr(defaults, name))
            parser.add_argument(flag, dest=name, action="append", default=None,
                                help=help_text)
            continue
        if kind is bool:
            default = env_bool(prog, env, getattr(defaults, name))
            parser.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction,
                                default=default, help=help_text)
            continue
        value = os.environ.get(env, getattr(defaults, name))
        try:
            default = kind(value)
        except ValueError:
            parser.error(f"${env} must be a {kind.__name__}, not {value!r}")
        parser.add_argument(flag, dest=name, type=kind, default=default, help=help_text)
    ns = parser.parse_args(argv)
    for name, values in repeated.items():
        if getattr(ns, name) is None:
            setattr(ns, name, values)
    for flag, name, *_ in flags:
        if name in positive and getattr(ns, name) <= 0:
            parser.error(f"{flag} must be positive (got {getattr(ns, name):g})")
        check = (checks or {}).get(name)
        problem = check(getattr(ns, name)) if check is not None else None
        if problem is not None:
            parser.error(f"{flag} {getattr(ns, name)!r}: {problem}")
    return config(**{f.name: getattr(ns, f.name) for f in fields(config)  # type: ignore[arg-type]
                     if hasattr(ns, f.name)})


def env_list(env: str, default: list[str]) -> list[str]:
    """A list environment variable: values separated by commas or whitespace."""
    value = os.environ.get(env)
    if value is None:
        return list(default)
    return [part for part in re.split(r"[\s,]+", value) if part]


def env_bool(prog: str, env: str, default: bool) -> bool:
    """A boolean environment variable: 1/true/yes/on or 0/false/no/off; else exit."""
    value = os.environ.get(env)
    if value is None or value == "":
        return default
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise SystemExit(f"{prog}: ${env} must be true or false, not {value!r}")
