"""The editor loop of `journals edit` and `shards edit` (see the package docstring).

The specs are rendered as YAML (as `list -o yaml` shows them) in a temporary
`.yaml` file below a header of `#⚙` lines, and the editor opens it. Saved
changes are validated and applied; only specs that changed are sent. On a
validation error or a refusal (a revision no longer current, a missing
journal) the editor opens again on the user's own text, with the error in
`#⚠` lines above it, so nothing typed is lost. An empty or unchanged file
applies nothing.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from gazctl.commands.apply_txns import is_partial
from gazctl.input_files import read_bounded
from gazctl.render import stdout
from gazette_core.consumer.api.errors import ShardStatusError
from gazette_core.errors import GazetteError, StatusError, ValidationError

NOTE = "#\u2699"  # lines of ours, dropped before parsing
WARN = "#\u26a0"  # the errors of the previous attempt, dropped too
# What reopens the editor: the input is wrong, or the cluster refused it as it stands.
REOPENS = (ValidationError, StatusError, ShardStatusError)


def header(noun: str, server: str) -> list[str]:
    return [
        f"{NOTE} Edit the {noun} specs below, then save and quit to apply them.",
        f"{NOTE} Lines starting with {NOTE} or {WARN} are ignored; an empty file cancels.",
        f"{NOTE} If the specs are invalid or the {server} refuses them, this file opens again.",
        f"{NOTE} Only {noun}s whose spec you changed are applied.",
    ]


def edit_specs(noun: str, server: str, original: str, apply: Callable[[str], None]) -> None:
    """Run the editor loop over `original` in a new temporary file; `apply` takes its text."""
    fd, name = tempfile.mkstemp(prefix=f"gazctl-{noun}s-edit-", suffix=".yaml")
    os.close(fd)
    _edit_loop(Path(name), header(noun, server), original, apply)


def _edit_loop(path: Path, head: list[str], original: str, apply: Callable[[str], None]
               ) -> None:
    text, errors = original, ""
    while True:
        edited = _open_editor(path, head, text, errors)
        if not edited.strip():
            path.unlink()
            stdout.print("Cancelled; empty file.")
            return
        if edited == text:
            if not errors:
                path.unlink()
                stdout.print("Cancelled; nothing to do.")
                return
            raise GazetteError(f"no changes to the invalid file; last edits saved to {path}")
        text = edited
        try:
            apply(text)
        except GazetteError as exc:
            if is_partial(exc):
                # Earlier transactions were applied: the buffer no longer matches the cluster.
                exc.hint = "; ".join(filter(None, [exc.hint, f"last edits saved to {path}"]))
                raise
            if isinstance(exc, REOPENS):
                errors = "; ".join(filter(None, [str(exc), exc.hint]))
                continue
            exc.hint = f"last edits saved to {path}"
            raise
        path.unlink()
        return


def _open_editor(path: Path, head: list[str], text: str, errors: str) -> str:
    """Write the buffer (header, errors, text), run the editor, return the user's text."""
    lines = list(head)
    if errors:
        lines.append(f"{WARN} Nothing was applied: fix these errors and save again.")
        lines += [f"{WARN} {line}" for line in errors.splitlines()]
    path.write_text("\n".join(lines) + "\n" + text)
    editor = os.environ.get("GAZ_EDITOR") or os.environ.get("EDITOR") or "vi"
    # Through the shell, so that the editor may carry arguments (`code --wait`).
    status = subprocess.run(["/bin/sh", "-c", f"{editor} {shlex.quote(str(path))}"]).returncode
    if status != 0:
        raise GazetteError(f"editor {editor!r} exited with status {status}; "
                           f"last edits saved to {path}")
    try:
        with path.open("rb") as source:
            edited = read_bounded(source, "", "the edited file")
    except ValidationError as exc:  # not UTF-8, or too large: not text to reopen on
        exc.hint = f"last edits saved to {path}"
        raise
    kept = [line for line in edited.splitlines(keepends=True)
            if not line.startswith((NOTE, WARN))]
    return "".join(kept)
