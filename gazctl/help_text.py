"""Help texts as paragraphs: the hard line breaks of docstrings are taken out once, here.

Docstrings are wrapped to the source's line length, and rich help (Typer's
help renderer) keeps every line break of a paragraph after the first, then
wraps each line again to the terminal: at any width but the source's, the
paragraphs break mid-sentence. `unwrap_app` rewrites the help of every command,
group and option of a Typer app before Typer builds its commands, so each
paragraph is one line and the terminal alone decides where it wraps.

Blank lines still separate paragraphs. Lines a writer broke on purpose keep
their breaks: list items (`- `, `* `, `1. `), indented lines (examples), and
a paragraph starting with click's no-rewrap mark `\\b`.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import typer
from typer.main import solve_typer_info_help
from typer.models import DefaultPlaceholder, ParameterInfo, TyperInfo

_LIST_ITEM = re.compile(r"(\s*)(?:[-*•]|\d+[.)])\s+")
NO_REWRAP = "\b"


def unwrap(text: str) -> str:
    """`text` with the lines of each paragraph joined, keeping lists and indented lines."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(_unwrap_paragraph(p) for p in paragraphs)


def _unwrap_paragraph(paragraph: str) -> str:
    if paragraph.startswith(NO_REWRAP):
        return paragraph
    lines: list[str] = []
    item_indent: int | None = None  # column of the text of the list item being continued
    for line in paragraph.split("\n"):
        indent = len(line) - len(line.lstrip())
        if item := _LIST_ITEM.match(line):
            lines.append(line)
            item_indent = item.end()
        elif lines and item_indent is not None and indent == item_indent:
            lines[-1] += " " + line.strip()  # a wrapped list item
        elif lines and indent == 0 and item_indent is None and not _kept(lines[-1]):
            lines[-1] += " " + line
        else:
            lines.append(line)
            item_indent = None
    return "\n".join(lines)


def _kept(line: str) -> bool:
    """Whether `line` stands alone: an indented (example) line."""
    return line[:1].isspace()


def unwrap_app(app: typer.Typer) -> None:
    """Unwrap the help of `app` itself and of every command, group and option in its tree."""
    text = _unwrap_group_help(TyperInfo(app))
    callback = app.registered_callback
    if callback is not None and not isinstance(callback.help, DefaultPlaceholder):
        callback.help = text  # the callback's explicit help is the one Typer shows
    else:
        app.info.help = text
    _unwrap_tree(app)


def _unwrap_tree(app: typer.Typer) -> None:
    for info in app.registered_commands:
        text = info.help if info.help is not None else inspect.getdoc(info.callback)
        info.help = unwrap(text) if text else text
        _unwrap_options(info.callback)
    for group in app.registered_groups:
        group.help = _unwrap_group_help(group)  # add_typer's help= wins over the rest
        if group.typer_instance is not None:
            callback = group.typer_instance.registered_callback
            if callback is not None:
                _unwrap_options(callback.callback)
            _unwrap_tree(group.typer_instance)
    if app.registered_callback is not None:
        _unwrap_options(app.registered_callback.callback)


def _unwrap_group_help(info: TyperInfo) -> str | None:
    """The help Typer would show for a group (it has several sources), unwrapped."""
    text = solve_typer_info_help(info)
    return unwrap(text) if text else text


def _unwrap_options(callback: Callable[..., Any] | None) -> None:
    """Unwrap the help of each option and argument `callback` declares (as its default).

    Options shared by several commands are the same objects; unwrapping is idempotent.
    """
    if callback is None:
        return
    for parameter in inspect.signature(callback).parameters.values():
        info = parameter.default
        if isinstance(info, ParameterInfo) and isinstance(info.help, str):
            info.help = unwrap(info.help)

