"""Help paragraphs wrap where the terminal ends, never where the docstring's lines did."""

from __future__ import annotations

import itertools

import pytest
import typer
from typer import rich_utils
from typer.testing import CliRunner

from gazctl import reference_docs
from gazctl.help_text import unwrap, unwrap_app
from tests.gazctl.support import cli, command_paths

WIDTHS = (80, 100, 140)
BOX = "╭"


def _help(width: int, monkeypatch: pytest.MonkeyPatch, *args: str,
          app: typer.Typer | None = None) -> str:
    """`--help` of a command as a terminal `width` columns wide shows it, without colour."""
    monkeypatch.setattr(rich_utils, "MAX_WIDTH", width)
    monkeypatch.setattr(rich_utils, "FORCE_TERMINAL", False)
    monkeypatch.setattr(rich_utils, "COLOR_SYSTEM", None)
    result = cli(*args, "--help") if app is None else CliRunner().invoke(app, [*args, "--help"])
    assert result.exit_code == 0, result.output
    return result.stdout


def _description(text: str) -> list[list[str]]:
    """The paragraphs of the help's prose: after the usage line, before the first box."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("Usage:")) + 1
    end = next((i for i, line in enumerate(lines) if line.startswith(BOX)), len(lines))
    paragraphs: list[list[str]] = [[]]
    for line in lines[start:end]:
        if line.strip():
            paragraphs[-1].append(line.rstrip())
        elif paragraphs[-1]:
            paragraphs.append([])
    return [p for p in paragraphs if p]


def _early_breaks(text: str, width: int) -> list[str]:
    """Lines of a paragraph that end although the next word would have fitted on them.

    Rich pads the prose one column on each side and breaks a line only when the
    next word does not fit, so a line it broke plus that word overflows width - 2.
    """
    early = []
    for paragraph in _description(text):
        for line, following in itertools.pairwise(paragraph):
            content = line[1:]  # the left padding
            if len(content) + 1 + len(following.split()[0]) <= width - 2:
                early.append(f"{line!r} (then {following.split()[0]!r})")
    return early


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("command", command_paths(), ids=lambda c: " ".join(c) or "gazctl")
def test_help_paragraphs_fill_the_terminal_width(
        command: list[str], width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    text = _help(width, monkeypatch, *command)

    assert _description(text), text  # every command describes itself
    assert _early_breaks(text, width) == [], text


def test_reference_pages_fill_their_width_too() -> None:
    early = {entry.title: _early_breaks(reference_docs.render_help(entry), reference_docs.WIDTH)
             for entry in reference_docs.command_tree()}

    assert {title: lines for title, lines in early.items() if lines} == {}


def _toy(docstring: str, option_help: str) -> typer.Typer:
    toy = typer.Typer()

    def run(flag: str = typer.Option("", "--flag", help=option_help)) -> None:
        pass

    run.__doc__ = docstring
    toy.command("run")(run)
    toy.command("other")(lambda: None)  # a group, so the command is reached by name
    unwrap_app(toy)
    return toy


def test_unwrapped_option_help_wraps_to_the_table_column(monkeypatch: pytest.MonkeyPatch) -> None:
    toy = _toy("Run.", "Where the\nfragments live, as\nthe brokers see it.")

    text = _help(100, monkeypatch, "run", app=toy)

    assert "Where the fragments live, as the brokers see it." in text


def test_lists_examples_and_no_rewrap_paragraphs_keep_their_lines() -> None:
    docstring = """Summary line
    continued.

    A paragraph
    of prose.

    - one item that
      wraps in the source
    - two

    Example:
        gazctl journals read -l name=a/b
        gazctl journals list

    \b
    kept
    as is
    """

    assert unwrap(docstring) == (
        "Summary line continued.\n\n"
        "A paragraph of prose.\n\n"
        "- one item that wraps in the source\n- two\n\n"
        "Example:\n    gazctl journals read -l name=a/b\n    gazctl journals list\n\n"
        "\b\nkept\nas is")
