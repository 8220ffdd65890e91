"""Shards as a `Space` of apply_txns, and the journals an apply of shards needs.

Before shards are applied, every journal they name must exist (checked with
the brokers): each source, with a content-type whose messages a consumer can
frame, and the recovery log `<recovery_log_prefix>/<id>`, with the recovery-log
content-type. A missing or mistyped one is an input error naming it, so
`shards edit` reopens on it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gazctl.consumer_config import Clients
from gazette_core.broker.client.journals import list_journals
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.api.apply_limits import txn_ops
from gazette_core.consumer.api.client import apply_shards, list_shards
from gazette_core.consumer.api.errors import EtcdTransactionFailedError
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol.shard_spec_ext import recovery_log
from gazette_core.consumer.shardspace import dump_set, hoist
from gazette_core.errors import GazetteError, ValidationError
from gazette_core.message.framing import content_type, framing_for

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

RECOVERY_LOG_TYPE = "application/x-gazette-recoverylog"
REVISION_HINT = ("`gazctl shards list -o yaml` shows current revisions; revision 0 only "
                 "creates shards that do not exist yet, -1 applies at any revision")


class ShardRefusal(EtcdTransactionFailedError):
    """A transaction of shards was refused; `partial` when earlier ones were applied."""

    def __init__(self, detail: str, partial: bool) -> None:
        super().__init__(detail=detail)
        self.partial = partial


class ShardSpace:
    """Shards, listed and applied through a consumer's Shard API (set by `bind`)."""

    noun = "shard"
    revision_hint = REVISION_HINT
    clients: Clients

    def bind(self, clients: Clients) -> ShardSpace:
        self.clients = clients
        return self

    def change_name(self, change: cpb.ApplyRequest.Change) -> str:
        return change.upsert.id if change.HasField("upsert") else change.delete

    def txn_ops(self, change: cpb.ApplyRequest.Change) -> int:
        return txn_ops([change])[0]

    async def current(self, names: list[str]) -> dict[str, cpb.ListResponse.Shard]:
        if not names:
            return {}
        selector = pb.LabelSelector(include=pb.LabelSet(
            labels=[pb.Label(name="id", value=n) for n in sorted(set(names))]))
        resp = await list_shards(self.clients.shards, selector)
        return {s.spec.id: s for s in resp.shards}

    async def apply(self, changes: list[cpb.ApplyRequest.Change]) -> int:
        resp = await apply_shards(self.clients.shards, changes)
        return int(resp.header.etcd.revision)

    def is_refusal(self, exc: GazetteError) -> bool:
        return isinstance(exc, EtcdTransactionFailedError)

    def refusal(self, message: str, partial: bool) -> GazetteError:
        return ShardRefusal(message, partial)

    def yaml_lines(self, spec: Any, revision: int) -> list[str]:
        return dump_set(hoist([(spec, revision)])).splitlines()


async def check_journals(stub: JournalAsyncStub, changes: list[cpb.ApplyRequest.Change]
                         ) -> None:
    """Every journal the upserted shards name exists, with a fitting content-type."""
    upserts = [c.upsert for c in changes if c.HasField("upsert")]
    wanted = {s.journal for spec in upserts for s in spec.sources}
    wanted |= {log for spec in upserts if (log := recovery_log(spec))}
    found = await _journals(stub, sorted(wanted))
    for spec in upserts:
        for index, source in enumerate(spec.sources):
            _check_source(found, spec.id, index, source.journal)
        if log := recovery_log(spec):
            _check_log(found, spec.id, log)


async def _journals(stub: JournalAsyncStub, names: list[str]) -> dict[str, pb.JournalSpec]:
    if not names:
        return {}
    selector = pb.LabelSelector(include=pb.LabelSet(
        labels=[pb.Label(name="name", value=n) for n in names]))
    return {j.spec.name: j.spec for j in (await list_journals(stub, selector)).journals}


def _check_source(found: dict[str, pb.JournalSpec], shard: str, index: int,
                  journal: str) -> None:
    path = f"shard {shard!r} sources[{index}]"
    if journal not in found:
        raise _missing(ValidationError(path, f"source journal {journal!r} does not exist"))
    kind = content_type(found[journal])
    try:
        framing_for(kind)
    except ValueError:
        raise ValidationError(path, f"source journal {journal!r} has content-type "
                                    f"{kind!r}, which has no message framing") from None


def _check_log(found: dict[str, pb.JournalSpec], shard: str, log: str) -> None:
    path = f"shard {shard!r}"
    if log not in found:
        raise _missing(ValidationError(path, f"recovery log journal {log!r} does not exist"))
    if (kind := content_type(found[log])) != RECOVERY_LOG_TYPE:
        raise ValidationError(path, f"recovery log journal {log!r} has content-type {kind!r}, "
                                    f"not {RECOVERY_LOG_TYPE!r}")


def _missing(err: ValidationError) -> ValidationError:
    err.hint = "create it with `gazctl journals apply` first"
    return err
