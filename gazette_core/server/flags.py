"""Command-line flags of server processes, each falling back to its environment variable.

Brokers (`gazette serve`) and consumers (`gazette consumer`) describe their
flags as (flag, field, type, environment variable, help) rows; this module
turns such a table into a parsed config dataclass. A row may name more than
one variable, comma-separated, the first set one winning (a newer name
before an older one it replaces). `Duration` flags take Go's duration text.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from collections.abc import Callable
from dataclasses import fields
from typing import Any, NoReturn, TypeVar

from gazette_core.broker.protocol.durations_ext import format_go_duration, parse_go_duration
from gazette_core.errors import ValidationError
from gazette_core.server import termination

C = TypeVar("C")

# (flag, field, type, environment variable, help); the type may be a function of the text;
# type `list`: a repeatable string flag.
Flag = tuple[str, str, Callable[[Any], Any], str, str]
# What is wrong with a flag's value, or None when it is fine.
Check = Callable[[Any], str | None]


class Duration(float):
    """Seconds, written as a Go duration (`30ms`, `20s`, `1h30m`) or a plain number of seconds.

    Its repr is Go's text, so help shows a default as `20s`.
    """

    WHAT = "duration (like 30ms, 20s or 1h30m)"

    def __new__(cls, value: object = 0.0) -> Duration:
        if isinstance(value, str):
            text = value.strip()
            try:
                seconds = float(text)
            except ValueError:
                try:
                    seconds = parse_go_duration(text)
                except ValidationError:
                    raise ValueError(f"not a duration: {value!r}") from None
        elif isinstance(value, int | float):
            seconds = float(value)
        else:
            raise ValueError(f"not a duration: {value!r}")
        if not math.isfinite(seconds):
            raise ValueError(f"not a duration: {value!r}")
        return super().__new__(cls, seconds)

    def __repr__(self) -> str:
        return format_go_duration(self)

    __str__ = __repr__


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr and exit status 2."""

    def error(self, message: str) -> NoReturn:
        termination.record(message)
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
        names = ", ".join(f"${e}" for e in env.split(","))
        help_text = f"{text} [{names}] (default {getattr(defaults, name)!r})"
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
        var, value = env_value(env)
        if var is None:
            value = getattr(defaults, name)
        try:
            parsed = None if value is None else kind(value)  # None: the flag is unset
        except ValueError:
            parser.error(f"${var} must be a {getattr(kind, 'WHAT', kind.__name__)}, "
                         f"not {value!r}")
        parser.add_argument(flag, dest=name, type=kind, default=parsed, help=help_text)
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
    """A list environment variable (the first set of `env`'s names): values separated by
    commas or whitespace."""
    var, value = env_value(env)
    if var is None:
        return list(default)
    return [part for part in re.split(r"[\s,]+", value) if part]


def env_value(env: str) -> tuple[str | None, str]:
    """The first set variable of the comma-separated `env` names and its value, or (None, "")."""
    for var in env.split(","):
        if var in os.environ:
            return var, os.environ[var]
    return None, ""


def env_bool(prog: str, env: str, default: bool) -> bool:
    """A boolean environment variable: 1/true/yes/on or 0/false/no/off; else exit."""
    var, value = env_value(env)
    if var is None or value == "":
        return default
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise SystemExit(f"{prog}: ${var} must be true or false, not {value!r}")
