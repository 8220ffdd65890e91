"""Rows of one journal as tuples, before they become Arrow columns (arrow_frames.py).

- A message row is (journal, offset, uuid, producer, value): offset is the
  record's first byte, uuid and producer (12 hex digits) are None for a
  message without a UUID, and value is the JSON document's text or the CSV
  row's fields after its UUID. bulk_range.py makes these only for blocks
  Arrow cannot decode whole.
- Journals without a message framing give their bytes as they were read: rows
  (journal, offset, data) in offset order whose concatenation is the
  journal's content.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from gazette_core.message.interfaces import ZERO_UUID, Envelope, JSONRecord
from gazette_core.message.uuid import get_producer_id
from spark_jobs.decode.content import JournalTask, content

Row = tuple[Any, ...]
BATCH_BYTES = 1 << 20  # Raw rows are at most this long.


def message_row(env: Envelope) -> Row:
    u = env.message.get_uuid()
    uuid, producer = (None, None) if u == ZERO_UUID else (str(u), get_producer_id(u).hex())
    msg = env.message
    value = msg.text if isinstance(msg, JSONRecord) else list(msg)[1:]  # type: ignore[call-overload]
    return env.journal, env.begin, uuid, producer, value


async def raw_rows(task: JournalTask, begin: int = 0, end: int | None = None
                   ) -> AsyncIterator[list[Row]]:
    """Rows of the task's bytes within [begin, end), each at most BATCH_BYTES long."""
    async for offset, chunk in content(task, begin, end):
        yield [(task.journal, offset + at, bytes(chunk[at:at + BATCH_BYTES]))
               for at in range(0, len(chunk), BATCH_BYTES)]
