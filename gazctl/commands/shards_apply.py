"""`gazctl shards apply` and `gazctl shards edit`: shard specs from a shard set's YAML.

The journals twins' behaviour, on their shared code (`apply_plan`,
`apply_txns`, `gazctl.editor`): only shards whose spec changes are sent,
`--dry-run` shows each change's diff, `--max-txn-size` splits the changes
into transactions, and the edit loop reopens on an error. Before anything is
sent the journals the shards name are checked with the brokers
(`shards_space.check_journals`).
"""

from __future__ import annotations

from gazctl.commands.apply_plan import Planned, finish_apply, plan_and_apply, report, to_send
from gazctl.commands.selection import NoMatchError, require_selector
from gazctl.commands.shards_space import ShardSpace, check_journals
from gazctl.commands.spec_input import DryRun, MaxTxnSize, SpecsFile, read_specs
from gazctl.consumer_config import Clients, ConsumerAddress, RequiredShardSelector, run_shards
from gazctl.editor import edit_specs
from gazctl.options import BrokerAddress, Timeout
from gazctl.render import stdout
from gazette_core.consumer.api.client import list_shards
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol.rpc_ext import validate_apply_request
from gazette_core.consumer.shardspace import dump_set, hoist, load_set, push_down, to_apply_request


def apply(
    specs: str = SpecsFile("shard"),
    dry_run: bool = DryRun("shard"),
    max_txn_size: int = MaxTxnSize,
    consumer: str | None = ConsumerAddress,
    broker: str | None = BrokerAddress,
    timeout: str = Timeout,
) -> None:
    """Apply shard specs from a shard set: `common` values and a list of `shards`.

    Revision 0 creates, -1 ignores revisions. Shards whose spec already equals the
    cluster's are left alone. Every source journal and recovery log must exist first.
    A dry run checks the same, and refuses changes whose revision is not current.
    """
    request = _request(read_specs(specs))
    planned, revision = _plan_and_apply(request, max_txn_size, dry_run, consumer, broker,
                                        timeout)
    finish_apply(ShardSpace(), planned, revision, dry_run)


def edit(
    selector: str = RequiredShardSelector,
    max_txn_size: int = MaxTxnSize,
    consumer: str | None = ConsumerAddress,
    broker: str | None = BrokerAddress,
    timeout: str = Timeout,
) -> None:
    """Edit the specs of the selected shards in $GAZ_EDITOR, $EDITOR or vi, then apply them."""
    sel = require_selector(selector)
    resp = run_shards(consumer, lambda c: list_shards(c.shards, sel), timeout)
    if not resp.shards:
        raise NoMatchError.of(selector, "shards")
    original = dump_set(hoist([(s.spec, s.mod_revision) for s in resp.shards]))

    def apply_text(text: str) -> None:
        planned, revision = _plan_and_apply(_request(text), max_txn_size, False, consumer,
                                            broker, timeout)
        report(ShardSpace(), planned, show_diff=False)
        sent = len(to_send(planned))
        stdout.print(f"applied {sent} change(s) at revision {revision}" if sent
                     else "No shard changed; nothing applied.")

    edit_specs("shard", "consumer", original, apply_text)


def _request(text: str) -> cpb.ApplyRequest:
    request = to_apply_request(push_down(load_set(text)))
    validate_apply_request(request)
    return request


def _plan_and_apply(request: cpb.ApplyRequest, max_txn_size: int, dry_run: bool,
                    consumer: str | None, broker: str | None, timeout: str
                    ) -> tuple[list[Planned], int]:
    changes = list(request.changes)

    async def body(clients: Clients) -> tuple[list[Planned], int]:
        await check_journals(clients.brokers(), changes)
        return await plan_and_apply(ShardSpace().bind(clients), changes, max_txn_size, dry_run)

    return run_shards(consumer, body, timeout, broker=broker, with_broker=True)
