"""`gazctl shards unassign`: take the selected shards off their consumers, to be rescheduled.

Unassign removes a shard's failed assignments and, unless `--failed`, its
primary's, so the allocator places it afresh (its standby usually takes
over). The shards go in batches of 100, all within 10 seconds, as Go's
gazctl does. Each shard the consumer touched is printed with the status and
route it had; `--dry-run` prints those it would touch and changes nothing.
"""

from __future__ import annotations

import asyncio

import typer

from gazctl.commands.selection import NoMatchError, require_selector
from gazctl.commands.shards_list import status_of
from gazctl.consumer_config import Clients, ConsumerAddress, RequiredShardSelector, run_shards
from gazctl.options import Timeout
from gazctl.render import stdout
from gazctl.usage import NothingDone
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.api.client import list_shards, unassign
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.errors import GazetteError

BATCH = 100
LIMIT_S = 10.0


def unassign_cmd(
    selector: str = RequiredShardSelector,
    failed: bool = typer.Option(False, "--failed",
                                help="Only shards with a FAILED replica, and only those "
                                     "assignments."),
    dry_run: bool = typer.Option(False, "--dry-run",
                                 help="Print the shards that would be unassigned; change "
                                      "nothing."),
    consumer: str | None = ConsumerAddress,
    timeout: str = Timeout,
) -> None:
    """Unassign the selected shards from their consumers; the allocator places them again.

    Exits 3 when the selector matches no shard, or (--failed) none of them has failed.
    """
    sel = require_selector(selector)
    listed, touched = run_shards(consumer, lambda c: _unassign(c, sel, failed, dry_run),
                                 timeout)
    if not listed:
        raise NoMatchError.of(selector, "shards")
    by_id = {s.spec.id: s for s in listed}
    verb = "would unassign" if dry_run else "unassigned"
    for shard in touched:
        stdout.print(f"{verb} {shard} (was {_was(by_id[shard])})", highlight=False)
    if not touched:
        raise NothingDone("no selected shard has a failed replica" if failed
                          else "no selected shard is assigned")


async def _unassign(clients: Clients, sel: pb.LabelSelector, failed: bool, dry_run: bool
                    ) -> tuple[list[cpb.ListResponse.Shard], list[str]]:
    listed = list((await list_shards(clients.shards, sel)).shards)
    ids = [s.spec.id for s in listed]
    touched: list[str] = []
    try:
        async with asyncio.timeout(LIMIT_S):
            for start in range(0, len(ids), BATCH):
                touched += await unassign(clients.shards, ids[start:start + BATCH],
                                          only_failed=failed, dry_run=dry_run, timeout=LIMIT_S)
    except TimeoutError:
        done = f"; unassigned before then: {', '.join(touched)}" if touched else ""
        raise GazetteError(f"unassign did not finish within {LIMIT_S:g}s{done}") from None
    return listed, touched


def _was(shard: cpb.ListResponse.Shard) -> str:
    code = cpb.ReplicaStatus.Code.Name(status_of(shard))  # type: ignore[arg-type]
    members = [f"{m.suffix}:{cpb.ReplicaStatus.Code.Name(s.code)}"
               for m, s in zip(shard.route.members, shard.status, strict=False)]
    return f"{code} on {', '.join(members) or 'no consumer'}"
