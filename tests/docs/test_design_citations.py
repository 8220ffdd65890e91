"""Citations of the design documents point at sections that exist, and none leave the repository.

Code and docs cite `docs/design/<file>.md#<section>`; the design documents link each
other as `<file>.md#<section>`. Anchors are GitHub's: the heading in lower case, spaces
as hyphens, other punctuation dropped.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT / "docs" / "design"
SCANNED = ("gazette_core", "gazctl", "spark_jobs", "tests", "bench", "examples", "docs", "deploy")
TOP_FILES = ("README.md", "Makefile", "pyproject.toml")
SUFFIXES = {".py", ".md", ".proto", ".toml", ".yaml", ".yml", ".txt", ".cfg", ".ini", ""}

CITATION = re.compile(r"docs/design/([\w-]+\.md)(?:#([\w-]+))?")
LINK = re.compile(r"\]\(([\w-]+\.md)?(?:#([\w-]+))?\)")
# Documents that were never part of the repository, and ways of citing them.
OUTSIDE = re.compile(
    r"spec §|§\s*\d|Hard part|\.\./shared|shared/spec|DESIGN\.md|performance\.md"
    r"|(?<![\w/])(?:broker|consumer|servers)\.md"
)
# The generated reference's root page is docs/reference/gazctl.md.
GAZCTL_MD = re.compile(r"(?<![\w/])gazctl\.md")
GAZCTL_MD_HOMES = (
    "docs/reference/",
    "gazctl/reference_docs.py",
    "tests/gazctl/test_reference_docs.py",
)


def slug(heading: str) -> str:
    """GitHub's anchor of a markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of every heading of a markdown file (code blocks skipped)."""
    found: set[str] = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#{1,6}\s+(.*)", line)):
            found.add(slug(m.group(1)))
    return found


def scanned_files() -> list[Path]:
    files = [ROOT / name for name in TOP_FILES]
    for folder in SCANNED:
        files += [
            p
            for p in (ROOT / folder).rglob("*")
            if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts
        ]
    return sorted(files)


def _problem(target: str, anchor: str | None) -> str | None:
    path = DESIGN / target
    if not path.is_file():
        return f"no docs/design/{target}"
    if anchor and anchor not in anchors(path):
        return f"no section #{anchor} in docs/design/{target}"
    return None


def test_slugs_are_githubs() -> None:
    assert slug("Headers, routes and Etcd revisions") == "headers-routes-and-etcd-revisions"
    assert slug("FragmentStoreHealth") == "fragmentstorehealth"
    assert slug("The `gazette` face") == "the-gazette-face"


def test_every_citation_names_an_existing_section() -> None:
    broken = []
    for path in scanned_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for lineno, line in enumerate(text.splitlines(), start=1):
            for m in CITATION.finditer(line):
                if problem := _problem(m.group(1), m.group(2)):
                    broken.append(f"{path.relative_to(ROOT)}:{lineno}: {problem}")
    assert not broken, "\n".join(broken)


def test_design_documents_link_existing_sections() -> None:
    broken = []
    for path in sorted(DESIGN.glob("*.md")):
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            for m in LINK.finditer(line):
                target, anchor = m.group(1) or path.name, m.group(2)
                if problem := _problem(target, anchor):
                    broken.append(f"{path.relative_to(ROOT)}:{lineno}: {problem}")
    assert not broken, "\n".join(broken)


def test_nothing_cites_a_document_outside_the_repository() -> None:
    this = Path(__file__).resolve()
    found = []
    for path in scanned_files():
        if path.resolve() == this:
            continue
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        for lineno, line in enumerate(text.splitlines(), start=1):
            if rel.startswith("docs/design/") and LINK.search(line):
                continue  # links between design documents: checked above
            gazctl_md = GAZCTL_MD.search(line) and not rel.startswith(GAZCTL_MD_HOMES)
            if OUTSIDE.search(line) or gazctl_md:
                found.append(f"{rel}:{lineno}: {line.strip()}")
    assert not found, "references to documents outside the repository:\n" + "\n".join(found)
