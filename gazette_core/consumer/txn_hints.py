"""The primary's periodic hints: every hint interval, between transactions (Hard part 5).

Hints are built by the recorder behind a barrier, so they never name an op
that is not yet in the log, and are stored guarded by the assignment's
CreateRevision, so a primary that lost its assignment cannot overwrite its
successor's hints. The first write comes one interval after promotion.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from gazette_core.keyspace.etcd_util import EtcdUnavailableError

if TYPE_CHECKING:
    from gazette_core.consumer.recoverylog.recorder import Recorder
    from gazette_core.consumer.txn_commit import Settled

log = logging.getLogger(__name__)

StoreHints = Callable[[Any], Awaitable[None]]


class HintsTimer:
    """Stores the recorder's hints through `store` once `interval_s` has passed."""

    def __init__(self, recorder: Recorder, store: StoreHints, interval_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._recorder = recorder
        self._store = store
        self.interval_s = interval_s
        self._clock = clock
        self._last = clock()
        self.written = 0

    async def maybe_store(self, previous: Settled | None) -> None:
        if self._clock() - self._last < self.interval_s:
            return
        self._last = self._clock()
        if previous is not None:
            await previous.wait()  # The state the hints describe is committed.
        hints = await self._recorder.build_hints()
        try:
            await self._store(hints)
        except EtcdUnavailableError as err:
            log.warning("storing primary hints of %r: %s", self._recorder.log, err)
            return
        self.written += 1
