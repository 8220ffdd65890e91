"""Journals as a `Space` of apply_txns: how `journals apply` and `edit` list and apply specs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gazette_core.broker.client.journals import apply_journals, list_journals
from gazette_core.broker.journalspace.hoist import hoist
from gazette_core.broker.journalspace.yaml_io import dump_tree
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import GazetteError, StatusError

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

REVISION_HINT = ("`gazctl journals list -o yaml` shows current revisions; revision 0 only "
                 "creates journals that do not exist yet, -1 applies at any revision")


class PartialRefusal(StatusError):
    """A transaction was refused after earlier ones were applied; the message names them."""

    partial = True


class JournalSpace:
    """Journals, listed and applied through a broker's Journal stub (set by `bind`)."""

    noun = "journal"
    revision_hint = REVISION_HINT
    stub: JournalAsyncStub

    def bind(self, stub: JournalAsyncStub) -> JournalSpace:
        """This space, calling `stub` (known only once the command has connected)."""
        self.stub = stub
        return self

    def change_name(self, change: pb.ApplyRequest.Change) -> str:
        return change.upsert.name if change.HasField("upsert") else change.delete

    def txn_ops(self, change: pb.ApplyRequest.Change) -> int:
        return 1  # the broker puts or deletes the journal's key

    async def current(self, names: list[str]) -> dict[str, pb.ListResponse.Journal]:
        if not names:
            return {}
        # Several values of one label name in an include set match any of them.
        selector = pb.LabelSelector(include=pb.LabelSet(
            labels=[pb.Label(name="name", value=n) for n in sorted(set(names))]))
        return {j.spec.name: j for j in (await list_journals(self.stub, selector)).journals}

    async def apply(self, changes: list[pb.ApplyRequest.Change]) -> int:
        resp = await apply_journals(self.stub, pb.ApplyRequest(changes=changes))
        return int(resp.header.etcd.revision)

    def is_refusal(self, exc: GazetteError) -> bool:
        return isinstance(exc, StatusError) and exc.status == pb.ETCD_TRANSACTION_FAILED

    def refusal(self, message: str, partial: bool) -> GazetteError:
        kind = PartialRefusal if partial else StatusError
        return kind(pb.ETCD_TRANSACTION_FAILED, message)

    def yaml_lines(self, spec: Any, revision: int) -> list[str]:
        return dump_tree(hoist([(spec, revision)])).splitlines()
