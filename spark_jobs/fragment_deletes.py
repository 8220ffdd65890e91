"""One fragment's delete as an executor runs it, and the tally both prune jobs keep of them.

`delete_fragment` deletes a fragment from its backing store and answers an
outcome: pruned, already gone (the store no longer had it), permission
denied, or failed. `DeleteTally` folds outcomes into the counters that
prune.py's and shards_prune.py's summaries share; each summary adds its own
counters and its own JSON shape on top.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.stores.base import StoreNotFoundError, StorePermissionError
from gazette_core.broker.stores.registry import get_store
from spark_jobs.selection import uses_file_root

# Outcomes of one delete, as executors report them.
PRUNED = "pruned"
GONE = "gone"
DENIED = "permission_denied"
FAILED = "failed"
WOULD_PRUNE = "would_prune"  # a dry run's delete, reported but not done
Outcome = tuple[str, str, int, str]
"""(outcome, journal, content bytes, message)"""


async def delete_fragment(f: pb.Fragment, file_root: str, file_only: bool = False) -> Outcome:
    """Delete one fragment from its backing store and say how that went."""
    size = f.end - f.begin
    if not file_root and uses_file_root(f.backing_store, file_only):
        # A relative root would resolve against the executor's working directory.
        return FAILED, f.journal, size, f"{f.backing_store}: no file root to resolve it under"
    try:
        await get_store(f.backing_store, file_root, file_only).delete(f)
    except StorePermissionError as exc:
        return DENIED, f.journal, size, str(exc)
    except StoreNotFoundError:
        return GONE, f.journal, size, ""
    except Exception as exc:
        return FAILED, f.journal, size, str(exc)
    return PRUNED, f.journal, size, ""


@dataclass
class DeleteTally:
    """The fragments examined and what became of the deletes: counts and content bytes."""

    fragments: int = 0
    fragments_pruned: int = 0
    fragments_kept: int = 0
    already_gone: int = 0
    permission_denied: int = 0
    failed: int = 0
    bytes_total: int = 0
    bytes_pruned: int = 0
    bytes_kept: int = 0
    bytes_already_gone: int = 0
    dry_run: bool = False
    errors: list[str] = field(default_factory=list)

    def count(self, outcome: str, size: int, message: str) -> None:
        """Count one delete's outcome (a would-be delete counts as pruned)."""
        if outcome in (PRUNED, WOULD_PRUNE):
            self.fragments_pruned += 1
            self.bytes_pruned += size
        elif outcome == GONE:
            self.already_gone += 1
            self.bytes_already_gone += size
        elif outcome == DENIED:
            self.permission_denied += 1
        else:
            self.failed += 1
        if message:
            self.errors.append(message)

    def settle(self) -> None:
        """Sort the errors and derive what was kept, once every outcome is counted."""
        self.errors.sort()
        self.fragments_kept = self.fragments - self.fragments_pruned - self.already_gone
        self.bytes_kept = self.bytes_total - self.bytes_pruned - self.bytes_already_gone

    def fields(self, names: tuple[str, ...]) -> dict[str, Any]:
        """The named counters, in that order (lists copied): a summary's JSON shape."""
        return {name: _copied(getattr(self, name)) for name in names}


def _copied(value: Any) -> Any:
    return list(value) if isinstance(value, list) else value
