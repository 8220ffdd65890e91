"""What an ApplyRequest would change, and applying just that, for `apply` and `edit`.

Each change is compared with the journal the cluster has now: a spec equal
to the current one is left out (re-applying it would only bump revisions and
wake every watcher), so a listing applied back unchanged sends nothing. What
is left goes out in transactions of at most `--max-txn-size` changes
(`apply_txns`). `conflicts` names the changes whose expected revision is not
the journal's current one: a dry run refuses those as the broker would.
"""

from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.markup import escape

from gazctl.commands.apply_txns import apply_in_transactions, change_name, current_journals
from gazctl.render import stdout
from gazette_core.broker.journalspace.hoist import hoist
from gazette_core.broker.journalspace.yaml_io import dump_tree
from gazette_core.broker.protocol import protocol_pb2 as pb

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

KINDS = ("created", "changed", "unchanged", "deleted")
# A delete of a journal that does not exist: not sent, and counted only when it happens.
ABSENT = "absent"
STYLES = {"created": "green", "changed": "yellow", "unchanged": "dim", "deleted": "red",
          ABSENT: "yellow"}


@dataclass
class Planned:
    """One change of the request, classified against the cluster's current journal."""

    change: pb.ApplyRequest.Change
    kind: str  # one of KINDS
    current: pb.ListResponse.Journal | None

    @property
    def name(self) -> str:
        return change_name(self.change)


async def plan(stub: JournalAsyncStub, request: pb.ApplyRequest) -> list[Planned]:
    """Classify every change of `request` against the journals the cluster has now."""
    names = [change_name(c) for c in request.changes]
    current = await current_journals(stub, names)
    return [_classify(c, current.get(n)) for c, n in zip(request.changes, names, strict=True)]


def _classify(change: pb.ApplyRequest.Change, current: pb.ListResponse.Journal | None
              ) -> Planned:
    if not change.HasField("upsert"):
        return Planned(change, "deleted" if current is not None else ABSENT, current)
    if current is None:
        return Planned(change, "created", None)
    same = current.spec == change.upsert and change.expect_mod_revision in (
        -1, current.mod_revision)
    return Planned(change, "unchanged" if same else "changed", current)


def to_send(planned: list[Planned]) -> list[pb.ApplyRequest.Change]:
    return [p.change for p in planned if p.kind not in ("unchanged", ABSENT)]


def summary(planned: list[Planned]) -> str:
    counts = Counter(p.kind for p in planned)
    kinds = (*KINDS, ABSENT) if counts[ABSENT] else KINDS
    return ", ".join(f"{counts[kind]} {kind}" for kind in kinds)


def describe(p: Planned) -> str:
    """One line: what happens to the journal, and under which revision guard."""
    if p.kind == ABSENT:
        return f"delete {p.name}: no such journal, nothing to delete"
    rev = p.change.expect_mod_revision
    guard = "any revision" if rev == -1 else ("new" if rev == 0 else f"revision {rev}")
    verb = {"created": "create", "changed": "update", "unchanged": "unchanged",
            "deleted": "delete"}[p.kind]
    return f"{verb} {p.name} ({guard})"


def diff(p: Planned) -> list[str]:
    """Unified diff lines of the journal's YAML, current to requested."""
    # Both sides at one revision: the guard is on the line above, not a change.
    revision = p.current.mod_revision if p.current else 0
    before = _yaml(p.current.spec, revision) if p.current else []
    after = _yaml(p.change.upsert, revision) if p.change.HasField("upsert") else []
    lines = difflib.unified_diff(before, after, "cluster", "request", n=2, lineterm="")
    return list(lines)[2:]  # without the ---/+++ file lines


def _yaml(spec: pb.JournalSpec, revision: int) -> list[str]:
    return dump_tree(hoist([(spec, revision)])).splitlines()


async def plan_and_apply(stub: JournalAsyncStub, request: pb.ApplyRequest, max_txn_size: int,
                         dry_run: bool = False) -> tuple[list[Planned], int]:
    """Classify the request's changes and apply those that change something.

    The revision of the last transaction, or 0 when nothing was sent.
    """
    planned = await plan(stub, request)
    changes = to_send(planned)
    if dry_run or not changes:
        return planned, 0
    return planned, await apply_in_transactions(stub, changes, max_txn_size)


def report(planned: list[Planned], show_diff: bool) -> None:
    """A line per journal (with its YAML diff when asked), then the counts."""
    for p in planned:
        stdout.print(f"[{STYLES[p.kind]}]{escape(describe(p))}[/]", highlight=False)
        if show_diff and p.kind not in ("unchanged", ABSENT):
            for line in diff(p):
                style = {"+": "green", "-": "red"}.get(line[:1], "dim")
                stdout.print(f"    [{style}]{escape(line)}[/]", highlight=False)
    stdout.print(summary(planned), highlight=False)
