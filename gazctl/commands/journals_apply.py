"""`gazctl journals apply`: create, update or delete journals from hierarchical YAML."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from gazctl.config import BrokerAddress, run
from gazctl.render import stdout
from gazette_core.broker.client.journals import apply_journals
from gazette_core.broker.journalspace.pushdown import push_down, to_apply_request
from gazette_core.broker.journalspace.yaml_io import load_tree
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.validate_ext import validate_apply_request
from gazette_core.errors import StatusError, ValidationError


def apply(
    specs: str = typer.Option("-", "--specs", help="YAML file of journal specs; - for stdin."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Validate and show the changes only."),
    broker: str | None = BrokerAddress,
) -> None:
    """Apply journal specs from a YAML tree (revision 0 creates, -1 ignores revisions)."""
    text = sys.stdin.read() if specs == "-" else _read(specs)
    request = to_apply_request(push_down(load_tree(text)))
    validate_apply_request(request)
    for change in request.changes:
        stdout.print(_describe(change), highlight=False)
    if dry_run:
        stdout.print(f"dry run: {len(request.changes)} change(s) not applied")
        return
    try:
        resp = run(broker, lambda stub: apply_journals(stub, request))
    except StatusError as exc:
        if exc.status == pb.ETCD_TRANSACTION_FAILED:
            exc.hint = ("nothing was applied: a spec's revision differs from its journal's, "
                        "and revision 0 only creates journals that do not exist yet; "
                        "`gazctl journals list -o yaml` shows current revisions")
        raise
    revision = resp.header.etcd.revision
    stdout.print(f"applied {len(request.changes)} change(s) at revision {revision}")


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise ValidationError("--specs", f"cannot read {path!r}: {exc.strerror}") from None


def _describe(change: pb.ApplyRequest.Change) -> str:
    rev = change.expect_mod_revision
    guard = "any revision" if rev == -1 else ("new" if rev == 0 else f"revision {rev}")
    if change.HasField("upsert"):
        verb = {0: "create", -1: "apply"}.get(rev, "update")
        return f"{verb} {change.upsert.name} ({guard})"
    return f"delete {change.delete} ({guard})"
