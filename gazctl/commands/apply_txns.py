"""Applying changes in Etcd transactions, and saying exactly what a refusal left applied.

Each transaction of at most `--max-txn-size` changes succeeds or fails whole;
a failure leaves the earlier ones applied. A refused transaction
(ETCD_TRANSACTION_FAILED: some expected revision was not current) is
explained by listing its journals again and naming each one whose revision
differs, with both revisions; with several transactions the error also names
the journals applied before it and those left unapplied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gazette_core.broker.client.journals import apply_journals, list_journals
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import GazetteError, StatusError

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

REVISION_HINT = ("`gazctl journals list -o yaml` shows current revisions; revision 0 only "
                 "creates journals that do not exist yet, -1 applies at any revision")


class PartialApply(GazetteError):
    """A transaction failed after earlier ones were applied; the message names them."""


class PartialRefusal(StatusError):
    """A transaction was refused after earlier ones were applied; the message names them."""


async def apply_in_transactions(stub: JournalAsyncStub, changes: list[pb.ApplyRequest.Change],
                                max_txn_size: int) -> int:
    """Apply in transactions of at most `max_txn_size` changes (0: one); the last revision."""
    size = max_txn_size or len(changes)
    txns = [changes[start:start + size] for start in range(0, len(changes), size)]
    revision = 0
    for index, txn in enumerate(txns):
        try:
            resp = await apply_journals(stub, pb.ApplyRequest(changes=txn))
        except GazetteError as exc:
            done = _progress(txns, index, revision)
            if isinstance(exc, StatusError) and exc.status == pb.ETCD_TRANSACTION_FAILED:
                where = f"transaction {index + 1} of {len(txns)} refused: " if len(txns) > 1 else ""
                raise await _refused(stub, txn, where, done, partial=index > 0) from None
            if index == 0:
                raise
            raise PartialApply(f"{exc}; {done}") from exc
        revision = int(resp.header.etcd.revision)
    return revision


async def _refused(stub: JournalAsyncStub, txn: list[pb.ApplyRequest.Change], where: str,
                   done: str, partial: bool) -> StatusError:
    current = await current_journals(stub, [change_name(c) for c in txn])
    why = conflicts(txn, current) or ["an expected revision changed while applying"]
    kind = PartialRefusal if partial else StatusError
    refused = kind(pb.ETCD_TRANSACTION_FAILED, where + "; ".join([*why, done]))
    refused.hint = REVISION_HINT
    return refused


def _progress(txns: list[list[pb.ApplyRequest.Change]], failed: int, revision: int) -> str:
    """What was applied before transaction `failed` (0-based) and what was not."""
    if failed == 0:
        return "nothing was applied"
    applied = ", ".join(change_name(c) for txn in txns[:failed] for c in txn)
    rest = ", ".join(change_name(c) for txn in txns[failed:] for c in txn)
    earlier = "1 earlier transaction" if failed == 1 else f"{failed} earlier transactions"
    return f"applied in {earlier}, at revision {revision}: {applied}; not applied: {rest}"


def change_name(change: pb.ApplyRequest.Change) -> str:
    return change.upsert.name if change.HasField("upsert") else change.delete


async def current_journals(stub: JournalAsyncStub, names: list[str]
                           ) -> dict[str, pb.ListResponse.Journal]:
    """The journals of `names` the cluster has now, by name."""
    if not names:
        return {}
    # Several values of one label name in an include set match any of them.
    selector = pb.LabelSelector(include=pb.LabelSet(
        labels=[pb.Label(name="name", value=n) for n in sorted(set(names))]))
    return {j.spec.name: j for j in (await list_journals(stub, selector)).journals}


def conflicts(changes: list[pb.ApplyRequest.Change],
              current: dict[str, pb.ListResponse.Journal]) -> list[str]:
    """A line per change whose expected revision is not its journal's current one."""
    lines = []
    for change in changes:
        name, expect = change_name(change), change.expect_mod_revision
        journal = current.get(name)
        have = journal.mod_revision if journal is not None else 0
        if expect in (-1, have):
            continue
        want = "0 (a new journal)" if expect == 0 else str(expect)
        now = f"its current revision is {have}" if journal else "it does not exist"
        lines.append(f"journal {name}: expected revision {want}, but {now}")
    return lines
