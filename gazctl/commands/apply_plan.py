"""What an ApplyRequest would change, and applying just that, for `apply` and `edit`.

Shared by journals and shards (see `apply_txns.Space`). Each change is
compared with the spec the cluster has now: a spec equal to the current one
is left out (re-applying it would only bump revisions and wake every
watcher), so a listing applied back unchanged sends nothing. What is left
goes out in transactions of at most `--max-txn-size` changes (`apply_txns`).
`refuse_conflicts` refuses in a dry run, as the cluster would, the changes
whose expected revision is not the current one.
"""

from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import dataclass

from rich.markup import escape

from gazctl.commands.apply_txns import Change, Listed, Space, apply_in_transactions, conflicts
from gazctl.render import stdout
from gazette_core.errors import GazetteError

KINDS = ("created", "changed", "unchanged", "deleted")
# A delete of a spec the cluster does not list, counted only when it happens. At
# any revision (-1) it is still sent: a stored spec the cluster cannot use (one
# beyond today's bounds, say) is not listed, and deleting it is the way out; a
# delete of a key that does not exist changes nothing. At a revision, not sent.
ABSENT = "absent"
STYLES = {"created": "green", "changed": "yellow", "unchanged": "dim", "deleted": "red",
          ABSENT: "yellow"}


@dataclass
class Planned:
    """One change of the request, classified against the cluster's current spec."""

    change: Change
    kind: str  # one of KINDS
    current: Listed | None
    name: str


async def plan(space: Space, changes: list[Change]) -> list[Planned]:
    """Classify every change against the specs the cluster has now."""
    names = [space.change_name(c) for c in changes]
    current = await space.current(names)
    return [_classify(c, current.get(n), n) for c, n in zip(changes, names, strict=True)]


def _classify(change: Change, current: Listed | None, name: str) -> Planned:
    if not change.HasField("upsert"):
        return Planned(change, "deleted" if current is not None else ABSENT, current, name)
    if current is None:
        return Planned(change, "created", None, name)
    same = current.spec == change.upsert and change.expect_mod_revision in (
        -1, current.mod_revision)
    return Planned(change, "unchanged" if same else "changed", current, name)


def _sent(p: Planned) -> bool:
    if p.kind == ABSENT:
        return bool(p.change.expect_mod_revision == -1)
    return p.kind != "unchanged"


def to_send(planned: list[Planned]) -> list[Change]:
    return [p.change for p in planned if _sent(p)]


def summary(planned: list[Planned]) -> str:
    counts = Counter(p.kind for p in planned)
    kinds = (*KINDS, ABSENT) if counts[ABSENT] else KINDS
    return ", ".join(f"{counts[kind]} {kind}" for kind in kinds)


def describe(p: Planned, noun: str) -> str:
    """One line: what happens to the spec, and under which revision guard."""
    if p.kind == ABSENT and _sent(p):
        return (f"delete {p.name}: not listed (no such {noun}, or its stored spec is invalid); "
                "deleting its key if stored")
    if p.kind == ABSENT:
        return f"delete {p.name}: no such {noun}, nothing to delete"
    rev = p.change.expect_mod_revision
    guard = "any revision" if rev == -1 else ("new" if rev == 0 else f"revision {rev}")
    verb = {"created": "create", "changed": "update", "unchanged": "unchanged",
            "deleted": "delete"}[p.kind]
    return f"{verb} {p.name} ({guard})"


def diff(space: Space, p: Planned) -> list[str]:
    """Unified diff lines of the spec's YAML, current to requested."""
    # Both sides at one revision: the guard is on the line above, not a change.
    revision = p.current.mod_revision if p.current else 0
    before = space.yaml_lines(p.current.spec, revision) if p.current else []
    after = space.yaml_lines(p.change.upsert, revision) if p.change.HasField("upsert") else []
    lines = difflib.unified_diff(before, after, "cluster", "request", n=2, lineterm="")
    return list(lines)[2:]  # without the ---/+++ file lines


async def plan_and_apply(space: Space, changes: list[Change], max_txn_size: int,
                         dry_run: bool = False) -> tuple[list[Planned], int]:
    """Classify the changes and apply those that change something.

    The revision of the last transaction, or 0 when nothing was sent.
    """
    planned = await plan(space, changes)
    sending = to_send(planned)
    if dry_run or not sending:
        return planned, 0
    return planned, await apply_in_transactions(space, sending, max_txn_size)


def report(space: Space, planned: list[Planned], show_diff: bool) -> None:
    """A line per spec (with its YAML diff when asked), then the counts."""
    for p in planned:
        stdout.print(f"[{STYLES[p.kind]}]{escape(describe(p, space.noun))}[/]", highlight=False)
        if show_diff and p.kind not in ("unchanged", ABSENT):
            for line in diff(space, p):
                style = {"+": "green", "-": "red"}.get(line[:1], "dim")
                stdout.print(f"    [{style}]{escape(line)}[/]", highlight=False)
    stdout.print(summary(planned), highlight=False)


def refuse_conflicts(space: Space, planned: list[Planned]) -> None:
    """Refuse, as the cluster would, changes whose revision is not the spec's current one."""
    current = {p.name: p.current for p in planned if p.current is not None}
    if found := conflicts(space, to_send(planned), current):
        refused = GazetteError("dry run: the apply would be refused: " + "; ".join(found))
        refused.hint = space.revision_hint
        raise refused


def finish_apply(space: Space, planned: list[Planned], revision: int, dry_run: bool) -> None:
    """What `apply` prints once planned (and, unless a dry run, applied)."""
    report(space, planned, show_diff=dry_run)
    sent = len(to_send(planned))
    if dry_run:
        refuse_conflicts(space, planned)
        stdout.print(f"dry run: {sent} change(s) not applied")
    elif sent:
        stdout.print(f"applied {sent} change(s) at revision {revision}")
    else:
        stdout.print("nothing to apply")
