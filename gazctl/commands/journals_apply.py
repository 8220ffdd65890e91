"""`gazctl journals apply`: create, update or delete journals from hierarchical YAML."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from gazctl.commands.apply_plan import Planned, plan_and_apply, report, to_send
from gazctl.commands.apply_txns import REVISION_HINT, conflicts
from gazctl.config import BrokerAddress, Timeout, run
from gazctl.render import stdout
from gazctl.usage import UsageError
from gazette_core.broker.journalspace.pushdown import push_down, to_apply_request
from gazette_core.broker.journalspace.yaml_io import load_tree
from gazette_core.broker.protocol.validate_ext import validate_apply_request
from gazette_core.errors import GazetteError


def apply(
    specs: str = typer.Option("-", "--specs", help="YAML file of journal specs; - for stdin."),
    dry_run: bool = typer.Option(False, "--dry-run",
                                 help="Show each journal's changes against the cluster only."),
    max_txn_size: int = typer.Option(0, "--max-txn-size", min=0,
                                     help="Most changes per Etcd transaction (0: no limit)."),
    broker: str | None = BrokerAddress,
    timeout: str = Timeout,
) -> None:
    """Apply journal specs from a YAML tree (revision 0 creates, -1 ignores revisions).

    Journals whose spec already equals the cluster's are left alone. A dry run refuses,
    as the apply would, changes whose revision is not the journal's current one.
    """
    text = sys.stdin.read() if specs == "-" else _read(specs)
    request = to_apply_request(push_down(load_tree(text)))
    validate_apply_request(request)

    planned, revision = run(
        broker, lambda stub: plan_and_apply(stub, request, max_txn_size, dry_run), timeout)
    report(planned, show_diff=dry_run)
    sent = len(to_send(planned))
    if dry_run:
        _refuse_conflicts(planned)
        stdout.print(f"dry run: {sent} change(s) not applied")
    elif sent:
        stdout.print(f"applied {sent} change(s) at revision {revision}")
    else:
        stdout.print("nothing to apply")


def _refuse_conflicts(planned: list[Planned]) -> None:
    """Refuse, as the broker would, changes whose revision is not the journal's current one."""
    current = {p.name: p.current for p in planned if p.current is not None}
    if found := conflicts(to_send(planned), current):
        refused = GazetteError("dry run: the apply would be refused: " + "; ".join(found))
        refused.hint = REVISION_HINT
        raise refused


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise UsageError("--specs", f"cannot read {path!r}: {exc.strerror}") from None
