"""Go's `-l=value` spelling of a short option's value, which click would read as `=value`.

go-flags takes `-l=name=foo` as the selector `name=foo`, as it takes
`--selector=name=foo`; click keeps the `=` in a short option's value. Every
gazctl command parses with `GoStyleCommand`, which splits such an argument in
two first: `-l` and `name=foo`. An argument that is the value of the option
before it is left alone, as is everything after `--`.
"""

from __future__ import annotations

from typer._click.core import Context
from typer.core import TyperCommand, TyperOption


def value_options(command: TyperCommand) -> set[str]:
    """The option names of `command` that take a value (not flags)."""
    return {name for param in command.params
            if isinstance(param, TyperOption) and not param.is_flag and not param.count
            for name in (*param.opts, *param.secondary_opts)}


def split_short_values(args: list[str], takes_value: set[str]) -> list[str]:
    """`args` with each `-X=value` of a short option taking a value as `-X`, `value`."""
    out: list[str] = []
    rest = iter(args)
    for arg in rest:
        if arg == "--":
            out += [arg, *rest]
            break
        if arg in takes_value:  # its value follows, whatever it looks like
            out.append(arg)
            if (value := next(rest, None)) is not None:
                out.append(value)
        elif len(arg) > 2 and arg[2] == "=" and arg[:2] in takes_value:
            out += [arg[:2], arg[3:]]
        else:
            out.append(arg)
    return out


class GoStyleCommand(TyperCommand):
    """A typer command that also reads `-X=value` as go-flags does."""

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, split_short_values(args, value_options(self)))
