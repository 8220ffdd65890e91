"""Journal suspension: the append-time table and the spec writes it makes.

See docs/design/append.md#suspension.

A suspended journal costs nothing but its Etcd item: PARTIAL keeps a single
replica (its fragments are readable), FULL keeps none (there is nothing left
to read). The broker changes a journal's `suspend` block itself, from the
`suspend` mode of an append: `decide` is the pure table, `write_suspend` the
guarded Etcd write after which the append resolves again. A FULL journal is
resumed at resolution (`resume_full`), because it has no primary to append to.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.durations_ext import to_seconds
from gazette_core.broker.protocol.suspend_ext import suspend_level
from gazette_core.keyspace import etcd_util

if TYPE_CHECKING:
    from gazette_core.broker.replica import Replica
    from gazette_core.broker.resolver import Resolution
    from gazette_core.broker.service import Broker

Level = pb.JournalSpec.Suspend
Mode = pb.AppendRequest
# With no flush interval, a journal counts as idle a day after its last persist.
DEFAULT_IDLE_SECONDS = 24 * 60 * 60


@dataclass(frozen=True)
class Step:
    """What an append does about suspension before it streams anything.

    `write` set: roll the spool if `roll`, write that block, resolve again.
    `refuse` set: answer `status` at once. Otherwise the append proceeds and
    its response carries `status`.
    """

    status: pb.Status.ValueType = pb.OK
    write: pb.JournalSpec.Suspend | None = None
    roll: bool = False
    refuse: bool = False


def decide(mode: int, replica: Replica, now: float | None = None) -> Step:
    """The table of docs/design/append.md#suspension for a journal whose primary is this broker."""
    level = suspend_level(replica.spec)
    end = replica.spool.fragment.end
    if mode == Mode.SUSPEND_RESUME and level == Level.PARTIAL:
        return Step(write=Level(level=Level.NONE, offset=end))
    if mode == Mode.SUSPEND_NO_RESUME and level != Level.NONE:
        return Step(status=pb.SUSPENDED, refuse=True)
    if mode not in (Mode.SUSPEND_IF_FLUSHED, Mode.SUSPEND_NOW):
        return Step()
    if replica.index.begin_offset == replica.index.end_offset:
        return Step(write=Level(level=Level.FULL, offset=end))
    if level == Level.PARTIAL:
        return Step(status=pb.SUSPENDED)
    if mode == Mode.SUSPEND_NOW or not index_dirty(replica, now):
        return Step(write=Level(level=Level.PARTIAL, offset=end), roll=True)
    return Step()


def index_dirty(replica: Replica, now: float | None = None) -> bool:
    """Whether the last fragment is unpersisted, or persisted within the flush interval."""
    entries = replica.index.entries()
    if not entries:
        return False
    mod_time = entries[-1].fragment.mod_time
    if mod_time == 0:
        return True
    interval = to_seconds(replica.spec.fragment.flush_interval) or DEFAULT_IDLE_SECONDS
    return (time.time() if now is None else now) - mod_time < interval


async def write_suspend(broker: Broker, res: Resolution, suspend: pb.JournalSpec.Suspend
                        ) -> None:
    """Store `suspend` in the journal's spec, if nothing changed since `res`.

    The transaction is guarded by the item's and every assignment's mod
    revision, so it never overwrites a concurrent apply or allocator move.
    Either way this broker's KeySpace has caught up when it returns, and the
    caller resolves the append again against whatever won.
    """
    assert res.item is not None and res.spec is not None
    spec = pb.JournalSpec()
    spec.CopyFrom(res.spec)
    spec.suspend.CopyFrom(suspend)
    compares = [etcd_util.cmp_mod_revision(res.item.key, res.item.mod_revision)]
    compares += [etcd_util.cmp_mod_revision(kv.key, kv.mod_revision) for kv in res.assignments]
    resp = await etcd_util.txn(broker.etcd, compares,
                               [etcd_util.put_op(res.item.key, spec.SerializeToString())])
    await broker.keyspace.wait_for_revision(resp.header.revision)


async def resume_full(broker: Broker, res: Resolution) -> None:
    """Resume a FULL journal at its suspension offset; the allocator then assigns it."""
    assert res.spec is not None
    await write_suspend(broker, res, Level(level=Level.NONE, offset=res.spec.suspend.offset))
