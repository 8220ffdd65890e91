"""FragmentIndex: which fragment (local spool or persisted) serves a journal offset.

The index is a CoverSet of the latest store listing plus the local spool
fragments that listing does not yet cover
(docs/design/fragments.md#the-fragment-index). Reads query it;
commits and store refreshes change it and wake blocked readers.
"""

from __future__ import annotations

import asyncio
import time

from gazette_core.broker.fragment.cover_set import CoverSet, IndexEntry
from gazette_core.broker.fragment.spool import Spool
from gazette_core.broker.protocol import protocol_pb2 as pb

__all__ = ["OFFSET_JUMP_AGE_SECONDS", "CoverSet", "FragmentIndex", "IndexEntry"]

# A persisted fragment this old may be jumped to across a gap (6 h).
OFFSET_JUMP_AGE_SECONDS = 6 * 60 * 60


class FragmentIndex:
    """Local and remote fragments of one journal, with change notification."""

    def __init__(self) -> None:
        self._local = CoverSet()
        self._remote = CoverSet()
        self._set = CoverSet()
        self._changed = asyncio.Event()
        self._refreshed = asyncio.Event()
        # The furthest end of any persisted fragment a listing ever showed: content
        # below it was persisted once, so if it is no longer listed it was deleted.
        self._persisted_end = 0

    @property
    def begin_offset(self) -> int:
        """Begin of the first known fragment (0 when empty)."""
        return self._set.begin_offset

    @property
    def end_offset(self) -> int:
        """End of the last known fragment, the index's write head (0 when empty)."""
        return self._set.end_offset

    @property
    def first_refresh_done(self) -> bool:
        """Whether a store listing has been applied at least once."""
        return self._refreshed.is_set()

    def entries(self) -> list[IndexEntry]:
        """Every fragment of the cover set, in offset order."""
        return list(self._set)

    def add_local(self, fragment: pb.Fragment, spool: Spool) -> None:
        """Record a commit: `fragment` (the grown spool fragment) is readable from `spool`."""
        own = pb.Fragment()
        own.CopyFrom(fragment)
        entry = IndexEntry(own, spool.file)
        self._local.add(entry)
        if self._set.add(entry):
            self._notify()

    def replace_remote(self, fragments: list[pb.Fragment], mark_refreshed: bool = True) -> None:
        """Adopt a store listing; local fragments it fully covers are dropped."""
        remote = CoverSet([IndexEntry(f) for f in fragments])
        self._persisted_end = max(self._persisted_end, remote.end_offset)
        combined = CoverSet(list(remote))
        local = CoverSet()
        for entry in self._local:
            if not remote.covers_range(entry.fragment.begin, entry.fragment.end):
                local.add(entry)
                combined.add(entry)
        self._remote, self._local, self._set = remote, local, combined
        if mark_refreshed:
            self._refreshed.set()
        self._notify()

    def add_remote(self, fragment: pb.Fragment) -> None:
        """Record one newly persisted fragment (e.g. from the persister) ahead of a listing."""
        own = pb.Fragment()
        own.CopyFrom(fragment)
        self._remote.add(IndexEntry(own))
        self.replace_remote([entry.fragment for entry in self._remote], mark_refreshed=False)

    def query(self, offset: int, begin_mod_time: int = 0) -> tuple[IndexEntry | None, int]:
        """The entry serving `offset` (or None) and the effective offset.

        `offset == -1` means the index end. Across a gap, the offset jumps to a
        persisted fragment that is first in the index or older than 6 h, and to an
        unpersisted first fragment once everything below it was persisted and has
        since been deleted (pruned).
        Persisted fragments modified before `begin_mod_time` are skipped.
        """
        if offset == -1:
            offset = self.end_offset
        while True:
            at, covered = self._set.lookup(offset)
            if covered:
                entry = self._set[at]
                mod_time = entry.fragment.mod_time
                if mod_time != 0 and mod_time < begin_mod_time:
                    offset = entry.fragment.end
                    continue
                return entry, offset
            if at < len(self._set) and self._may_jump_to(at):
                offset = self._set[at].fragment.begin
                continue
            return None, offset

    def _may_jump_to(self, at: int) -> bool:
        fragment = self._set[at].fragment
        if fragment.mod_time == 0:
            # A spool beginning past content no listing has shown yet may sit above
            # content another broker still holds (it joined the route late): jumping
            # would skip that. Content a listing once showed and no longer does is gone.
            return at == 0 and fragment.begin <= self._persisted_end
        return at == 0 or time.time() - fragment.mod_time > OFFSET_JUMP_AGE_SECONDS

    async def wait_for_change(self) -> None:
        """Resolve on the next add or refresh after this call."""
        await self._changed.wait()

    async def wait_first_refresh(self) -> None:
        """Resolve once the first store listing has been applied."""
        await self._refreshed.wait()

    def _notify(self) -> None:
        # Swap before setting so waiters arriving after this change wait for the next one.
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()
