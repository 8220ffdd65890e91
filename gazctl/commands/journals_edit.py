"""`gazctl journals edit`: change journal specs in an editor, applied when saved.

The selected journals are rendered as the hoisted YAML tree (as `journals
list -o yaml` shows them) in a temporary `.yaml` file, which the editor
opens. Saved changes are validated and applied; only journals whose spec
changed are sent. On a validation error or a broker refusal the editor opens
again on the user's own text, with the error above it, so nothing typed is
lost. An empty or unchanged file applies nothing.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import typer

from gazctl.commands.apply_plan import plan_and_apply, report, to_send
from gazctl.commands.apply_txns import PartialApply, PartialRefusal
from gazctl.commands.selection import matched_journals, require_selector
from gazctl.config import BrokerAddress, RequiredSelector, Timeout, run
from gazctl.render import stdout
from gazette_core.broker.journalspace.hoist import hoist
from gazette_core.broker.journalspace.pushdown import push_down, to_apply_request
from gazette_core.broker.journalspace.yaml_io import dump_tree, load_tree
from gazette_core.broker.protocol.validate_ext import validate_apply_request
from gazette_core.errors import GazetteError, StatusError, ValidationError

NOTE = "#\u2699"  # lines of ours, dropped before parsing
WARN = "#\u26a0"  # the errors of the previous attempt, dropped too
HEADER = [
    f"{NOTE} Edit the journal specs below, then save and quit to apply them.",
    f"{NOTE} Lines starting with {NOTE} or {WARN} are ignored; an empty file cancels.",
    f"{NOTE} If the specs are invalid or the broker refuses them, this file opens again.",
    f"{NOTE} Only journals whose spec you changed are applied.",
]


def edit(
    selector: str = RequiredSelector,
    max_txn_size: int = typer.Option(0, "--max-txn-size", min=0,
                                     help="Most changes per Etcd transaction (0: no limit)."),
    broker: str | None = BrokerAddress,
    timeout: str = Timeout,
) -> None:
    """Edit the specs of the selected journals in $GAZ_EDITOR, $EDITOR or vi, then apply them."""
    sel = require_selector(selector)
    found = run(broker, lambda stub: matched_journals(stub, sel, selector), timeout)
    original = dump_tree(hoist([(j.spec, j.mod_revision) for j in found]))
    fd, name = tempfile.mkstemp(prefix="gazctl-journals-edit-", suffix=".yaml")
    os.close(fd)
    path = Path(name)
    _edit_loop(path, original, lambda text: _apply(text, max_txn_size, broker, timeout))


def _edit_loop(path: Path, original: str, apply: Callable[[str], None]) -> None:
    text, errors = original, ""
    while True:
        edited = _open_editor(path, text, errors)
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
        except (PartialApply, PartialRefusal) as exc:
            # Earlier transactions were applied: the buffer no longer matches the cluster.
            exc.hint = "; ".join(filter(None, [exc.hint, f"last edits saved to {path}"]))
            raise
        except (ValidationError, StatusError) as exc:
            errors = str(exc)
            continue
        except GazetteError as exc:
            exc.hint = f"last edits saved to {path}"
            raise
        path.unlink()
        return


def _open_editor(path: Path, text: str, errors: str) -> str:
    """Write the buffer (header, errors, text), run the editor, return the user's text."""
    lines = list(HEADER)
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
    kept = [line for line in path.read_text().splitlines(keepends=True)
            if not line.startswith((NOTE, WARN))]
    return "".join(kept)


def _apply(text: str, max_txn_size: int, broker: str | None, timeout: str) -> None:
    """Validate the edited tree and apply the journals that changed."""
    request = to_apply_request(push_down(load_tree(text)))
    validate_apply_request(request)

    planned, revision = run(
        broker, lambda stub: plan_and_apply(stub, request, max_txn_size), timeout)
    report(planned, show_diff=False)
    sent = len(to_send(planned))
    stdout.print(f"applied {sent} change(s) at revision {revision}" if sent
                 else "No journal changed; nothing applied.")
