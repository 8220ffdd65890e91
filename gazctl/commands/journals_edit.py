"""`gazctl journals edit`: change journal specs in an editor, applied when saved.

The selected journals are rendered as the hoisted YAML tree (as `journals
list -o yaml` shows them); the editor loop (`gazctl.editor`, shared with `shards
edit`) validates and applies what was saved, reopening on an error.
"""

from __future__ import annotations

from gazctl.commands.apply_plan import plan_and_apply, report, to_send
from gazctl.commands.journals_space import JournalSpace
from gazctl.commands.selection import matched_journals, require_selector
from gazctl.commands.spec_input import MaxTxnSize
from gazctl.config import run
from gazctl.editor import edit_specs
from gazctl.options import BrokerAddress, RequiredSelector, Timeout
from gazctl.render import stdout
from gazette_core.broker.journalspace.hoist import hoist
from gazette_core.broker.journalspace.pushdown import push_down, to_apply_request
from gazette_core.broker.journalspace.yaml_io import dump_tree, load_tree
from gazette_core.broker.protocol.validate_ext import validate_apply_request


def edit(
    selector: str = RequiredSelector,
    max_txn_size: int = MaxTxnSize,
    broker: str | None = BrokerAddress,
    timeout: str = Timeout,
) -> None:
    """Edit the specs of the selected journals in $GAZ_EDITOR, $EDITOR or vi, then apply them."""
    sel = require_selector(selector)
    found = run(broker, lambda stub: matched_journals(stub, sel, selector), timeout)
    original = dump_tree(hoist([(j.spec, j.mod_revision) for j in found]))
    edit_specs("journal", "broker", original,
               lambda text: _apply(text, max_txn_size, broker, timeout))


def _apply(text: str, max_txn_size: int, broker: str | None, timeout: str) -> None:
    """Validate the edited tree and apply the journals that changed."""
    request = to_apply_request(push_down(load_tree(text)))
    validate_apply_request(request)

    space = JournalSpace()
    planned, revision = run(broker, lambda stub: plan_and_apply(
        space.bind(stub), list(request.changes), max_txn_size), timeout)
    report(space, planned, show_diff=False)
    sent = len(to_send(planned))
    stdout.print(f"applied {sent} change(s) at revision {revision}" if sent
                 else "No journal changed; nothing applied.")
