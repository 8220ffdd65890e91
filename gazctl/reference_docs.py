"""Generate gazctl's command reference: one Markdown page per command, and an index.

Every command and group of the tree gets a page (`gazctl.md` for the root,
`gazctl-journals-read.md` for `gazctl journals read`, ...) holding its `--help`
text as a terminal WIDTH columns wide shows it, without colour, so a page
depends on the code alone, not on the terminal or environment of whoever
runs `make docs`. README.md lists every command with its one-line summary.

Run as `python -m gazctl.reference_docs docs/reference` (`make docs`); pages of
commands that no longer exist are deleted. tests/gazctl/test_reference_docs.py
fails when a committed page is missing, stale or left over.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import typer
from typer import _click as click  # Typer ships its own copy of click.
from typer import rich_utils
from typer.core import TyperArgument, TyperGroup, TyperOption

from gazctl.cli import app as gazctl_app

WIDTH = 100
INDEX = "README.md"
PAGES = "gazctl*.md"  # The generator owns these names (and INDEX) in its directory.
CONVENTIONS = "conventions.md"  # written by hand, next to the pages; linked from INDEX
GENERATED = ("<!-- Generated from gazctl's help text by `make docs` "
             "(gazctl/reference_docs.py); do not edit. -->")


@dataclass(frozen=True)
class Entry:
    """One command or group of the tree, and the context its help is rendered in."""

    path: tuple[str, ...]  # ("gazctl", "journals", "read")
    command: click.Command
    context: click.Context

    @property
    def title(self) -> str:
        return " ".join(self.path)

    @property
    def page(self) -> str:
        return page_name(self.path)

    @property
    def summary(self) -> str:
        """The first paragraph of the help on one line, as the parent's help lists it."""
        if self.command.short_help:
            return self.command.short_help
        paragraph = inspect.cleandoc(self.command.help or "").split("\n\n")[0]
        return " ".join(paragraph.split())


def page_name(path: tuple[str, ...]) -> str:
    """The file of the command at `path`, e.g. gazctl-journals-read.md."""
    return "-".join(path) + ".md"


def command_tree(app: typer.Typer = gazctl_app) -> list[Entry]:
    """Every visible command and group of `app`, parents before their children."""
    root = typer.main.get_command(app)
    # Click wraps the usage line itself; subcommand contexts inherit the width.
    context = root.make_context("gazctl", [], resilient_parsing=True, terminal_width=WIDTH,
                                max_content_width=WIDTH)
    return list(_walk(root, context, ("gazctl",)))


def _walk(command: click.Command, context: click.Context,
          path: tuple[str, ...]) -> Iterator[Entry]:
    _home_as_tilde(command)
    yield Entry(path, command, context)
    if not isinstance(command, TyperGroup):
        return
    for name in command.list_commands(context):
        sub = command.commands[name]
        if not sub.hidden:
            sub_context = sub.make_context(name, [], parent=context, resilient_parsing=True)
            yield from _walk(sub, sub_context, (*path, name))


def _home_as_tilde(command: click.Command) -> None:
    """Write the home directory as ~ in help texts (e.g. a default under ~/.local/state).

    The pages would otherwise depend on who generated them. `get_command`
    builds a fresh tree each time, so the running CLI is not affected.
    """
    home = f"{Path.home()}/"
    if home == "//":
        return
    if command.help:
        command.help = command.help.replace(home, "~/")
    for param in command.params:
        if isinstance(param, TyperOption | TyperArgument) and param.help:
            param.help = param.help.replace(home, "~/")


@contextlib.contextmanager
def _plain_console() -> Iterator[None]:
    """Rich help WIDTH columns wide and colourless, whatever the terminal or environment.

    Typer reads $TERMINAL_WIDTH, $FORCE_COLOR and the like into these settings
    when it is imported; they are set for the duration and then restored.
    """
    saved = rich_utils.MAX_WIDTH, rich_utils.COLOR_SYSTEM, rich_utils.FORCE_TERMINAL
    rich_utils.MAX_WIDTH, rich_utils.COLOR_SYSTEM, rich_utils.FORCE_TERMINAL = WIDTH, None, False
    try:
        yield
    finally:
        rich_utils.MAX_WIDTH, rich_utils.COLOR_SYSTEM, rich_utils.FORCE_TERMINAL = saved


def render_help(entry: Entry) -> str:
    """The command's `--help` output, without trailing blanks or surrounding empty lines."""
    printed = io.StringIO()
    # Rich help is printed rather than returned; plain click help is returned.
    with _plain_console(), contextlib.redirect_stdout(printed):
        returned = entry.command.get_help(entry.context)
    lines = (printed.getvalue() + returned).splitlines()
    return "\n".join(line.rstrip() for line in lines).strip("\n")


def _fenced(text: str) -> list[str]:
    """`text` in a code block whose fence no backtick run inside it can close."""
    fence = "```"
    while fence in text:
        fence += "`"
    return [f"{fence}text", text, fence]


def render_page(entry: Entry, children: list[Entry]) -> str:
    """A command's page: title, links up, its help text, links to its subcommands."""
    links = [f"[All commands]({INDEX})"]
    if len(entry.path) > 1:
        parent = entry.path[:-1]
        links.insert(0, f"Parent: [`{' '.join(parent)}`]({page_name(parent)})")
    lines = [f"# `{entry.title}`", "", GENERATED, "", " · ".join(links), "",
             *_fenced(render_help(entry))]
    if children:
        lines += ["", "## Subcommands", ""]
        lines += [f"- [`{child.title}`]({child.page}): {child.summary}" for child in children]
    return "\n".join(lines) + "\n"


def render_index(entries: list[Entry]) -> str:
    """README.md: every command, linked to its page, with its one-line summary."""
    lines = ["# gazctl command reference", "", GENERATED, "",
             "One page per command, holding its `--help` output. Shell completion is "
             "described in the [README](../../README.md#shell-completion).", "",
             f"Exit codes, output formats, durations and the other rules every command "
             f"follows are in [{CONVENTIONS}]({CONVENTIONS}).", "",
             "| Command | Summary |", "|---|---|"]
    for entry in entries:
        summary = entry.summary.replace("|", "\\|")
        lines.append(f"| [`{entry.title}`]({entry.page}) | {summary} |")
    return "\n".join(lines) + "\n"


def generate(app: typer.Typer = gazctl_app) -> dict[str, str]:
    """Every file of the reference, by name: the index and one page per command."""
    entries = command_tree(app)
    pages = {INDEX: render_index(entries)}
    for entry in entries:
        if entry.page in pages:
            raise ValueError(f"two commands would share the page {entry.page}")
        children = [e for e in entries if e.path[:-1] == entry.path]
        pages[entry.page] = render_page(entry, children)
    return pages


def write(directory: Path, pages: dict[str, str]) -> tuple[list[str], list[str]]:
    """Write `pages` into `directory` and delete pages of commands that no longer exist.

    Returns the names written (new or changed) and the names deleted.
    """
    directory.mkdir(parents=True, exist_ok=True)
    removed = sorted(p.name for p in directory.glob(PAGES) if p.name not in pages)
    for name in removed:
        (directory / name).unlink()
    written = []
    for name, text in pages.items():
        path = directory / name
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
            written.append(name)
    return written, removed


def main(argv: list[str] | None = None) -> None:
    """`python -m gazctl.reference_docs DIRECTORY`: regenerate the reference in DIRECTORY."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.exit("usage: python -m gazctl.reference_docs DIRECTORY")
    directory = Path(args[0])
    pages = generate()
    written, removed = write(directory, pages)
    print(f"{directory}: {len(pages)} files, {len(written)} written, {len(removed)} removed"
          + "".join(f"\n  removed {name}" for name in removed))


if __name__ == "__main__":
    main()
