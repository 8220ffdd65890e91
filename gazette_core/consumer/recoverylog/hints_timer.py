"""The primary's periodic hints: every hint interval, behind a barrier.

See docs/design/recoverylog.md#when-hints-are-written.

`Recorder.build_hints()` snapshots the FSM and returns once a barrier after
everything recorded so far committed, so stored hints never name an op that
is not in the log. Hints only bound where playback starts (it reads on to
the head), so a snapshot taken while a commit is being recorded is as good
as one taken between transactions; running on a timer of its own also
covers a shard that sits idle. Writes are guarded by the assignment's
CreateRevision, so a primary that lost its assignment cannot overwrite its
successor's hints; it then stops writing. The first write comes one
interval after promotion: none is written during recovery.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from gazette_core.consumer.recoverylog.hints_store import AssignmentChangedError
from gazette_core.errors import GazetteError

if TYPE_CHECKING:
    from gazette_core.consumer.recoverylog.recorder import Recorder

log = logging.getLogger(__name__)

StoreHints = Callable[[Any], Awaitable[Any]]


class HintsTimer:
    """Stores the recorder's hints through `store` every `interval_s` seconds while run."""

    def __init__(self, recorder: Recorder, store: StoreHints, interval_s: float) -> None:
        self._recorder = recorder
        self._store = store
        self.interval_s = interval_s
        self.written = 0

    async def run(self) -> None:
        """Until cancelled, or until the assignment guarding the writes is gone."""
        while True:
            await asyncio.sleep(self.interval_s)
            try:
                await self.store_now()
            except AssignmentChangedError as err:
                log.warning("%s; not storing hints any more", err)
                return
            except GazetteError as err:
                # The recorder failing fails the transactions too; hints just wait.
                log.warning("storing primary hints of %r: %s", self._recorder.log, err)

    async def store_now(self) -> None:
        hints = await self._recorder.build_hints()
        if await self._store(hints) is not False:
            self.written += 1
