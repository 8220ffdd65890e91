"""The options of the `journals` and `shards` groups: taken before the subcommand and after it.

Go's gazctl hangs its connection, zone and logging options on the group, and
go-flags also takes a parent's options after the subcommand, so both
`gazctl journals --broker.address=X list` and `gazctl journals list
--broker.address=X` work there. Here too: each group takes them, and so does
every one of its subcommands. Given in both places, the subcommand's value
wins: it comes later on the command line, as go-flags reads it. When neither
place gives one, the environment variable, then gazctl.ini, then the default
apply (`gazctl.connection.setting`). `--timeout`, not Go's, is taken in both
places as well.

A subcommand receives the addresses and `--timeout` as its own parameters
when it declares them (`broker`, `consumer`, `timeout`); the others it never
sees: they are recorded for `gazctl.connection` and `gazctl.routes`, and
logging is set up from them (`gazctl.logs`) before the command runs.
"""

from __future__ import annotations

import enum
import functools
import inspect
from collections.abc import Callable
from typing import Any

import typer
from typer._click.core import ParameterSource
from typer._click.globals import get_current_context

from gazctl import logs
from gazctl.config import endpoints_of
from gazctl.connection import ALL_SETTINGS, BASE_SETTINGS, GROUPS, remember, setting
from gazctl.consumer_config import ConsumerAddress
from gazctl.options import BrokerAddress, Timeout
from gazctl.usage import UsageError

LOG_PANEL = "Logging and zone"
LogLevel = enum.StrEnum("LogLevel", {name: name for name in logs.LEVELS})  # type: ignore[misc]
LogFormat = enum.StrEnum("LogFormat", {name: name for name in logs.FORMATS})  # type: ignore[misc]
TYPES: dict[str, Any] = {"log_level": LogLevel, "log_format": LogFormat,
                         "broker_cache_size": int, "consumer_cache_size": int}
# The options each group takes: the parameters each side dials with, then both groups' own.
SIDES = {"journals": ("broker",), "shards": ("consumer", "broker")}
ADDRESSES = {"broker": BrokerAddress, "consumer": ConsumerAddress, "timeout": Timeout}
_AT_GROUP = "gazctl.group_options"  # ctx.meta key: the values given before the subcommand
PLACEMENT = ("The options below may come before the subcommand or after it, as in Go's gazctl; "
             "given in both places, the one after it wins.")


def names_of(group: str) -> list[str]:
    """Every option parameter of `group`, in the order its help lists them."""
    names = [*BASE_SETTINGS]
    for side in SIDES[group]:
        names += [side, *GROUPS[side][0]]
    return [*names, "timeout"]


def _panel(name: str) -> str | None:
    for settings, panel in GROUPS.values():
        if name in settings:
            return panel
    return LOG_PANEL if name in BASE_SETTINGS else None


def _option(name: str, *, at_group: bool) -> Any:
    """The typer option of `name`; a group's has no environment variable (its subcommand's has)."""
    if name in ADDRESSES:
        info = ADDRESSES[name]
        if not at_group:
            return info
        return typer.Option(None, *info.param_decls, help=info.help,
                            rich_help_panel=GROUPS[name][1] if name in GROUPS else None)
    flag, env, _, text = ALL_SETTINGS[name]
    return typer.Option(None, flag, envvar=None if at_group else env, show_envvar=not at_group,
                        help=text, rich_help_panel=_panel(name), case_sensitive=False)


def _parameters(names: list[str], *, at_group: bool) -> list[inspect.Parameter]:
    return [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY,
                              default=_option(name, at_group=at_group),
                              annotation=_annotation(name)) for name in names]


def _annotation(name: str) -> Any:
    return TYPES.get(name, str) | None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return str(value.value) if isinstance(value, enum.Enum) else str(value)


def group_callback(group: str) -> Callable[..., None]:
    """The callback of `group` taking its options, kept for its subcommand to merge."""
    def callback(**given: Any) -> None:
        meta = get_current_context().meta
        meta[_AT_GROUP] = {k: v for k, v in given.items() if v is not None}

    callback.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        _parameters(names_of(group), at_group=True))
    return callback


def with_group_options(command: Callable[..., Any], group: str) -> Callable[..., Any]:
    """`command` with `group`'s options added to its signature, merged with the group's."""
    names = names_of(group)
    signature = inspect.signature(command)
    own = [name for name in names if name in signature.parameters]
    added = [name for name in names if name not in signature.parameters]

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        values = _merged(kwargs, names)
        for name in added:
            kwargs.pop(name, None)
        kwargs.update((name, values[name]) for name in own)
        remember({name: _text(values[name]) for name in names if name in ALL_SETTINGS})
        logs.configure(_checked("log_level", logs.LEVELS), _checked("log_format", logs.FORMATS))
        for side in SIDES[group]:
            # Whether or not this command dials that side, a malformed address given to
            # it is refused before anything is read or sent.
            if values[side]:
                endpoints_of(f"--{side}.address", values[side])
        return command(*args, **kwargs)

    wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*signature.parameters.values(), *_parameters(added, at_group=False)])
    wrapper.__annotations__ = {**command.__annotations__,
                               **{name: _annotation(name) for name in added}}
    return wrapper


def _merged(kwargs: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """Each option's value: the subcommand's flag, else the group's, else env or default."""
    ctx = get_current_context()
    at_group = ctx.meta.get(_AT_GROUP, {})
    return {name: kwargs.get(name)
            if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE
            or name not in at_group else at_group[name] for name in names}


def _checked(name: str, allowed: Any) -> str:
    """A choice setting's value; one from gazctl.ini is checked here (click checks flags)."""
    value, source = setting(name)
    if value.lower() not in allowed:
        raise UsageError(ALL_SETTINGS[name][0], f"{value!r} (from {source}) is not one of "
                                                f"{', '.join(allowed)}")
    return value.lower()


def add_group_options(app: typer.Typer) -> None:
    """Give the `journals` and `shards` groups of `app`, and their subcommands, their options."""
    for info in app.registered_groups:
        group = info.name
        if info.typer_instance is None or group not in SIDES:
            continue
        sub = info.typer_instance
        sub.callback()(group_callback(group))
        sub.info.help = f"{sub.info.help}\n\n{PLACEMENT}"
        for command in sub.registered_commands:
            if command.callback is not None:
                command.callback = with_group_options(command.callback, group)
