"""Command-line flags of server processes, each falling back to its environment variable.

Brokers (`gazette serve`) and consumers (`gazette consumer`) describe their
flags as (flag, field, type, environment variable, help) rows; this module
turns such a table into a parsed config dataclass.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import fields
from typing import Any, NoReturn, TypeVar

C = TypeVar("C")

# (flag, field, type, environment variable, help); the type may be a function of the text.
Flag = tuple[str, str, Callable[[Any], Any], str, str]
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
    for flag, name, kind, env, text in flags:
        help_text = f"{text} [${env}] (default {getattr(defaults, name)!r})"
        if kind is bool:
            default = env_bool(prog, env, getattr(defaults, name))
            parser.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction,
                                default=default, help=help_text)
            continue
        value = os.environ.get(env, getattr(defaults, name))
        try:
            parsed = None if value is None else kind(value)  # None: the flag is unset
        except ValueError:
            parser.error(f"${env} must be a {kind.__name__}, not {value!r}")
        parser.add_argument(flag, dest=name, type=kind, default=parsed, help=help_text)
    ns = parser.parse_args(argv)
    for flag, name, *_ in flags:
        if name in positive and getattr(ns, name) <= 0:
            parser.error(f"{flag} must be positive (got {getattr(ns, name):g})")
        check = (checks or {}).get(name)
        problem = check(getattr(ns, name)) if check is not None else None
        if problem is not None:
            parser.error(f"{flag} {getattr(ns, name)!r}: {problem}")
    return config(**{f.name: getattr(ns, f.name) for f in fields(config)  # type: ignore[arg-type]
                     if hasattr(ns, f.name)})


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
