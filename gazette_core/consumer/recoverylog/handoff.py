"""Appends the player makes: write-head barriers and the hand-off no-op.

See docs/design/recoverylog.md#the-player.

Both retry retriable failures (no primary yet, a broker restarting): a
failed append commits nothing, so trying again is safe.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from gazette_core.broker.client.appender import append
from gazette_core.broker.client.backoff import Backoff
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.consumer.recoverylog.author import fence
from gazette_core.consumer.recoverylog.framing import encode
from gazette_core.consumer.recoverylog.playback_errors import PlaybackError
from gazette_core.errors import GazetteError

if TYPE_CHECKING:
    from gazette_core.broker.client.routing import JournalClient
    from gazette_core.consumer.recoverylog.fsm import FSM

RETRY_DEADLINE = 30.0


async def _append_retrying(client: JournalClient, log: str, data: bytes,
                           union_registers: pb.LabelSet | None = None) -> pb.AppendResponse:
    backoff = Backoff()
    loop = asyncio.get_running_loop()
    give_up = loop.time() + RETRY_DEADLINE
    while True:
        try:
            return await append(client, log, data, union_registers=union_registers)
        except GazetteError as err:
            delay = backoff.next_delay()
            if not err.retriable or loop.time() + delay > give_up:
                raise
            await asyncio.sleep(delay)


async def write_head(client: JournalClient, log: str) -> int:
    """The log's transactional write head, learned by an empty append."""
    try:
        resp = await _append_retrying(client, log, b"")
    except GazetteError as err:
        raise PlaybackError(f"learning the write head of recovery log {log!r}: {err}") from err
    return int(resp.commit.end)


async def inject_noop(client: JournalClient, log: str, fsm: FSM, author: int) -> pb.Fragment:
    """Append a no-op sequenced after what `fsm` has read, claiming `log` for `author`.

    Its `union_registers` sets the log's author register, so the previous
    recorder's appends (which check that register) fail from now on. The op
    is non-empty (seq_no, checksum and author set) so that it reads back as
    a frame. Returns the commit fragment: the op starts at its `begin`.
    """
    op = rpb.RecordedOp(seq_no=fsm.next_seq_no, checksum=fsm.next_checksum, author=author)
    frame, _ = encode(op)
    resp = await _append_retrying(client, log, frame, union_registers=fence(author))
    return resp.commit
