"""Every `gazctl` command the docs' shell blocks show exists and takes the flags shown.

Each command is parsed by gazctl's own command tree (Typer's click parser),
without running it: the command path must exist, every option must be one
the command takes (with a value where it needs one), and positional
arguments must fit what the command declares.
"""

from __future__ import annotations

import pytest
import typer
from typer import _click as click  # Typer ships its own copy of click.
from typer._click.exceptions import UsageError
from typer.core import TyperArgument, TyperGroup

from gazctl.cli import app
from tests.docs.snippets import SHELL, blocks, gazctl_commands, pages


def parse_problem(args: list[str]) -> str | None:
    """What is wrong with `gazctl ARGS` as a command line; None when it parses."""
    command: click.Command = typer.main.get_command(app)
    context = click.Context(command, info_name="gazctl")
    path = ["gazctl"]
    rest = list(args)
    while True:
        try:  # a group's own options (Go's group options) may come before its subcommand
            _, positional, _ = command.make_parser(context).parse_args(rest)
        except UsageError as exc:
            return f"{' '.join(path)}: {exc.format_message()}"
        if not isinstance(command, TyperGroup) or not positional:
            break
        sub = command.get_command(context, positional[0])
        if sub is None:
            return f"{' '.join(path)} has no command {positional[0]!r}"
        path.append(positional[0])
        rest = positional[1:]
        command = sub
        context = click.Context(sub, info_name=path[-1], parent=context)
    arguments = [p for p in command.params if isinstance(p, TyperArgument)]
    if any(a.nargs < 0 for a in arguments):
        return None
    if len(positional) > sum(a.nargs for a in arguments):
        return f"{' '.join(path)} takes no argument {positional[-1]!r}"
    return None


COMMANDS = [(block.where, args) for page in pages() for block in blocks(page)
            if block.lang in SHELL for args in gazctl_commands(block)]


def test_the_docs_show_gazctl_commands() -> None:
    shown = {" ".join(args[:2]) for _, args in COMMANDS}

    assert {"journals read", "shards apply", "local up"} <= shown


@pytest.mark.parametrize(("where", "args"), COMMANDS,
                         ids=[f"{where} gazctl {' '.join(args)}" for where, args in COMMANDS])
def test_shown_gazctl_command_parses(where: str, args: list[str]) -> None:
    assert parse_problem(args) is None, where


@pytest.mark.parametrize(("args", "problem"), [
    (["journals", "reed"], "gazctl journals has no command 'reed'"),
    (["journals", "read", "--no-such-flag"], "gazctl journals read: No such option: "
                                             "--no-such-flag"),
    (["journals", "read", "-l"], "gazctl journals read: Option '-l' requires an argument."),
    (["local", "env", "extra"], "gazctl local env takes no argument 'extra'"),
])
def test_a_wrong_command_line_is_caught(args: list[str], problem: str) -> None:
    assert parse_problem(args) == problem
