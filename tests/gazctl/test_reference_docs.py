"""The committed CLI reference (docs/reference/) covers gazctl's command tree and is current."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer
from typer import rich_utils
from typer.core import TyperGroup

from gazctl import reference_docs
from gazctl.cli import app

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference"
FIX = "run `make docs` and commit docs/reference/"


def _command_paths(command: Any, path: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Every command and group of the tree, walked independently of the generator."""
    paths = [path]
    if isinstance(command, TyperGroup):
        for name, sub in sorted(command.commands.items()):
            paths += _command_paths(sub, (*path, name))
    return paths


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return reference_docs.generate()


def test_every_command_of_the_tree_has_a_committed_page(pages: dict[str, str]) -> None:
    tree = {"-".join(path) + ".md" for path in
            _command_paths(typer.main.get_command(app), ("gazctl",))}
    assert "gazctl-journals-read.md" in tree and "gazctl-local-up.md" in tree

    assert sorted(tree - set(pages)) == [], "the generator skipped commands"
    missing = sorted(name for name in pages if not (REFERENCE / name).is_file())
    assert missing == [], f"docs/reference/ has no page for {missing}: {FIX}"


def test_committed_pages_match_the_help_text(pages: dict[str, str]) -> None:
    stale = sorted(name for name, text in pages.items()
                   if (REFERENCE / name).is_file() and (REFERENCE / name).read_text() != text)

    assert stale == [], f"stale pages in docs/reference/: {stale}: {FIX}"


def test_no_page_is_left_for_a_removed_command(pages: dict[str, str]) -> None:
    extra = sorted(p.name for p in REFERENCE.glob(reference_docs.PAGES) if p.name not in pages)

    assert extra == [], f"pages for commands that no longer exist: {extra}: {FIX}"


def test_pages_hold_the_help_and_link_up_and_down(pages: dict[str, str]) -> None:
    read = pages["gazctl-journals-read.md"]
    group = pages["gazctl-journals.md"]

    assert read.startswith("# `gazctl journals read`\n")
    assert "Usage: gazctl journals read [OPTIONS]" in read
    assert "--selector" in read and "\x1b[" not in read
    assert "Parent: [`gazctl journals`](gazctl-journals.md)" in read
    assert "- [`gazctl journals read`](gazctl-journals-read.md): Read journals" in group
    assert "| [`gazctl local up`](gazctl-local-up.md) | Start the stack" in pages["README.md"]
    for name, text in pages.items():
        for target in re.findall(r"\]\(([^)#]+\.md)\)", text):
            assert target in pages or (REFERENCE / target).resolve().is_file(), (name, target)


def test_pages_do_not_depend_on_the_terminal(
        pages: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    # What $TERMINAL_WIDTH, $FORCE_COLOR and $COLUMNS would set.
    monkeypatch.setattr(rich_utils, "MAX_WIDTH", 50)
    monkeypatch.setattr(rich_utils, "FORCE_TERMINAL", True)
    monkeypatch.setattr(rich_utils, "COLOR_SYSTEM", "truecolor")
    monkeypatch.setenv("COLUMNS", "40")

    assert reference_docs.generate() == pages
    assert rich_utils.MAX_WIDTH == 50  # restored after rendering


def test_pages_do_not_name_the_home_directory_of_whoever_generated_them(
        pages: dict[str, str]) -> None:
    assert "~/.local/state/gazette/local" in pages["gazctl-local-up.md"]
    assert [name for name, text in pages.items() if f"{Path.home()}/" in text] == []


def _toy_app(*commands: str) -> typer.Typer:
    toy = typer.Typer(name="gazctl")
    group = typer.Typer(help="Group help.")
    toy.add_typer(group, name="things")
    for name in commands:
        group.command(name, help=f"Do {name}.")(lambda: None)
    return toy


def test_write_adds_pages_and_deletes_those_of_removed_commands(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("not generated\n")
    reference_docs.write(tmp_path, reference_docs.generate(_toy_app("one", "two")))
    assert (tmp_path / "gazctl-things-two.md").is_file()

    written, removed = reference_docs.write(tmp_path, reference_docs.generate(_toy_app("one")))

    assert removed == ["gazctl-things-two.md"]
    assert sorted(written) == ["README.md", "gazctl-things.md"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "README.md", "gazctl-things-one.md", "gazctl-things.md", "gazctl.md", "notes.md"]
