"""The code blocks of the hand-written docs, and what each one's `doc-test` marker asks.

A fenced block is whatever lies between two ``` lines. An HTML comment on the
line just above its fence says how the docs tests treat a Python block:

- no marker: the block is a whole program, run as `python snippet.py`;
- `<!-- doc-test: file NAME (why) -->`: saved as NAME beside the page's other
  blocks (a module a later block imports), not run by itself;
- `<!-- doc-test: pytest NAME -->`: saved as NAME and run with pytest;
- `<!-- doc-test: excerpt of PATH (why) -->`: lines of the file PATH, in order
  (PATH itself runs in a test of its own);
- `<!-- doc-test: env NAME=VALUE (why) -->`: run with NAME set to VALUE;
- `<!-- doc-test: skip (why) -->`: not run; the reason is required.

The blocks of one page share a directory, so a `pytest` block can import the
`file` block it tests.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"<!--\s*doc-test:\s*(?P<kind>[\w-]+)\s*(?P<rest>.*?)\s*-->")
KINDS = ("file", "pytest", "excerpt", "env", "skip")
SHELL = ("sh", "bash", "console", "shell", "")


def pages() -> list[Path]:
    """Every hand-written Markdown page (the generated CLI reference is help output)."""
    found = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md",
             *sorted((ROOT / "examples").glob("*/README.md")),
             ROOT / "docs" / "reference" / "conventions.md"]
    return [p for p in found if p.is_file()]


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    kind: str = ""  # the marker's kind, "" for none
    argument: str = ""  # the marker's argument (a file name, a path, NAME=VALUE, a reason)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> Iterator[Block]:
    """The fenced blocks of `page`, each with the marker just above it, if any."""
    lines = page.read_text().splitlines()
    index = 0
    while index < len(lines):
        fence = re.match(r"^(`{3,})\s*([\w+-]*)\s*$", lines[index])
        if fence is None:
            index += 1
            continue
        end = next(i for i in range(index + 1, len(lines)) if lines[i].startswith(fence[1]))
        marker = MARKER.search(lines[index - 1]) if index > 0 else None
        kind, argument = (marker["kind"], marker["rest"]) if marker else ("", "")
        yield Block(page, index + 1, fence[2].lower(), "\n".join(lines[index + 1:end]) + "\n",
                    kind, argument)
        index = end + 1


def python_blocks() -> list[Block]:
    return [b for page in pages() for b in blocks(page) if b.lang == "python"]


def first_word(argument: str) -> str:
    """The marker's argument up to its reason in parentheses: a name, a path, NAME=VALUE."""
    return argument.split("(")[0].split()[0] if argument.split("(")[0].split() else ""


def excerpt_path(block: Block) -> Path:
    """The file an `excerpt of PATH` block quotes."""
    words = block.argument.split()
    assert len(words) >= 2 and words[0] == "of", f"{block.where}: expected 'excerpt of PATH'"
    return ROOT / words[1]


def gazctl_commands(block: Block) -> Iterator[list[str]]:
    """The argument lists of the `gazctl` commands a shell block shows.

    In a console block only `$ ` lines are commands (the rest is output).
    Continuation lines are joined; each command ends at a pipe, `;`, `&&`, a
    redirection, a closing `)` of `$(...)` or a comment.
    """
    console = block.lang == "console"
    text = block.text.replace("\\\n", " ")
    for line in text.splitlines():
        if console:
            if not line.startswith("$ "):
                continue
            line = line[2:]
        for match in re.finditer(r"(?:^|[\s(|;&])gazctl\s+([^|;&)<>#\n]*)", line):
            yield shlex.split(match[1])
