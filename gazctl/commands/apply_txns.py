"""Applying changes in Etcd transactions, and saying exactly what a refusal left applied.

Shared by journals and shards: a `Space` says how to name, list and apply
the specs of one kind. Each transaction of at most `--max-txn-size` changes
succeeds or fails whole; a failure leaves the earlier ones applied. With
`--max-txn-size 0` (the default) changes go in as few transactions as fit
Etcd's default limit of ETCD_MAX_TXN_OPS operations and compares each: one,
and so atomic, when they all fit, as Go's gazctl sends them. A refused
transaction (ETCD_TRANSACTION_FAILED: some expected revision was not current)
is explained by listing its specs again and naming each one whose revision
differs, with both revisions; with several transactions the error also names
the specs applied before it and those left unapplied.
"""

from __future__ import annotations

from typing import Any, Protocol

from gazette_core.errors import GazetteError
from gazette_core.keyspace.etcd_util import MAX_TXN_OPS as ETCD_MAX_TXN_OPS

# One change of an ApplyRequest (journals' or shards'): `upsert` or `delete`,
# and `expect_mod_revision`.
Change = Any
# One listed spec (journals' or shards' ListResponse entry): `spec` and `mod_revision`.
Listed = Any


class Space(Protocol):
    """How `apply` and `edit` handle one kind of spec (see journals_space, shards_space)."""

    noun: str  # "journal" or "shard"
    revision_hint: str

    def change_name(self, change: Change) -> str: ...

    def txn_ops(self, change: Change) -> int:
        """The Etcd operations the server's transaction spends on `change`."""
        ...

    async def current(self, names: list[str]) -> dict[str, Listed]:
        """The listed specs of `names` the cluster has now, by name."""
        ...

    async def apply(self, changes: list[Change]) -> int:
        """Apply `changes` in one transaction; the Etcd revision it was applied at."""
        ...

    def is_refusal(self, exc: GazetteError) -> bool:
        """Whether `exc` is the answer to an expected revision not being current."""
        ...

    def refusal(self, message: str, partial: bool) -> GazetteError:
        """The error of a refused transaction; its `partial` attribute set as given."""
        ...

    def yaml_lines(self, spec: Any, revision: int) -> list[str]:
        """One spec as the YAML lines `list -o yaml` would print for it alone."""
        ...


class PartialApply(GazetteError):
    """A transaction failed after earlier ones were applied; the message names them."""


def is_partial(exc: BaseException) -> bool:
    """Whether `exc` came after earlier transactions were applied (so a retry of the
    whole buffer no longer matches the cluster)."""
    return isinstance(exc, PartialApply) or getattr(exc, "partial", False)


async def apply_in_transactions(space: Space, changes: list[Change], max_txn_size: int) -> int:
    """Apply in transactions of at most `max_txn_size` changes (0: as few as fit Etcd's
    limit); the revision of the last."""
    txns = split(space, changes, max_txn_size)
    revision = 0
    for index, txn in enumerate(txns):
        try:
            revision = await space.apply(txn)
        except GazetteError as exc:
            done = _progress(space, txns, index, revision)
            if space.is_refusal(exc):
                where = f"transaction {index + 1} of {len(txns)} refused: " if len(txns) > 1 else ""
                raise await _refused(space, txn, where, done, partial=index > 0) from None
            if index == 0:
                raise
            raise PartialApply(f"{exc}; {done}") from exc
    return revision


def split(space: Space, changes: list[Change], max_txn_size: int) -> list[list[Change]]:
    """`changes` in consecutive transactions: `max_txn_size` changes each, or with 0 as
    many as keep each within ETCD_MAX_TXN_OPS operations and compares."""
    if max_txn_size:
        return [changes[start:start + max_txn_size]
                for start in range(0, len(changes), max_txn_size)]
    txns: list[list[Change]] = []
    ops = compares = 0
    for change in changes:
        cost, guard = space.txn_ops(change), int(change.expect_mod_revision != -1)
        if not txns or ops + cost > ETCD_MAX_TXN_OPS or compares + guard > ETCD_MAX_TXN_OPS:
            txns.append([])
            ops = compares = 0
        txns[-1].append(change)
        ops, compares = ops + cost, compares + guard
    return txns


async def _refused(space: Space, txn: list[Change], where: str, done: str,
                   partial: bool) -> GazetteError:
    current = await space.current([space.change_name(c) for c in txn])
    why = conflicts(space, txn, current) or ["an expected revision changed while applying"]
    refused = space.refusal(where + "; ".join([*why, done]), partial)
    refused.hint = space.revision_hint
    return refused


def _progress(space: Space, txns: list[list[Change]], failed: int, revision: int) -> str:
    """What was applied before transaction `failed` (0-based) and what was not."""
    if failed == 0:
        return "nothing was applied"
    applied = ", ".join(space.change_name(c) for txn in txns[:failed] for c in txn)
    rest = ", ".join(space.change_name(c) for txn in txns[failed:] for c in txn)
    earlier = "1 earlier transaction" if failed == 1 else f"{failed} earlier transactions"
    return f"applied in {earlier}, at revision {revision}: {applied}; not applied: {rest}"


def conflicts(space: Space, changes: list[Change], current: dict[str, Listed]) -> list[str]:
    """A line per change whose expected revision is not its spec's current one."""
    lines = []
    for change in changes:
        name, expect = space.change_name(change), change.expect_mod_revision
        listed = current.get(name)
        have = listed.mod_revision if listed is not None else 0
        if expect in (-1, have):
            continue
        want = f"0 (a new {space.noun})" if expect == 0 else str(expect)
        now = f"its current revision is {have}" if listed else "it does not exist"
        lines.append(f"{space.noun} {name}: expected revision {want}, but {now}")
    return lines
