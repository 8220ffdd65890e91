"""`gazctl journals apply`: create, update or delete journals from hierarchical YAML."""

from __future__ import annotations

from gazctl.commands.apply_plan import finish_apply, plan_and_apply
from gazctl.commands.journals_space import JournalSpace
from gazctl.commands.spec_input import DryRun, MaxTxnSize, SpecsFile, read_specs
from gazctl.config import run
from gazctl.options import BrokerAddress, Timeout
from gazette_core.broker.journalspace.pushdown import push_down, to_apply_request
from gazette_core.broker.journalspace.yaml_io import load_tree
from gazette_core.broker.protocol.validate_ext import validate_apply_request


def apply(
    specs: str = SpecsFile("journal"),
    dry_run: bool = DryRun("journal"),
    max_txn_size: int = MaxTxnSize,
    broker: str | None = BrokerAddress,
    timeout: str = Timeout,
) -> None:
    """Apply journal specs from a YAML tree (revision 0 creates, -1 ignores revisions).

    Journals whose spec already equals the cluster's are left alone. A dry run refuses,
    as the apply would, changes whose revision is not the journal's current one.
    """
    request = to_apply_request(push_down(load_tree(read_specs(specs))))
    validate_apply_request(request)

    space = JournalSpace()
    planned, revision = run(broker, lambda stub: plan_and_apply(
        space.bind(stub), list(request.changes), max_txn_size, dry_run), timeout)
    finish_apply(space, planned, revision, dry_run)
