"""A consumer app for process tests: the Counter, except that on shard `exit-a` its
consume_message calls sys.exit, as an application's careless error handling might."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from tests.consumer.runtime.apps import Counter, is_ack


@dataclass
class ExitingCounter(Counter):
    publish: bool = False

    async def consume_message(self, shard: Any, store: Any, envelope: Any,
                              publisher: Any) -> None:
        if shard.id == "exit-a" and not is_ack(envelope):
            sys.exit(7)
        await super().consume_message(shard, store, envelope, publisher)
