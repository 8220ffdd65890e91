"""What the transaction loop needs around bulk sequencing: its errors, and a rewind.

The loop hands the sequencer whole read chunks (Sequencer.queue_batch), which
settles a run of envelopes before any of them is consumed. When the
application defers one of them to the next transaction, the sequencer is
already past it, yet the transaction's checkpoint must stand just before it
(a restart from that checkpoint has to deliver it again). `source_before`
gives that checkpoint of the deferred envelope's journal: the previous
commit's, carried forward by reading the journal again up to the envelope
through a sequencer of its own. Only that journal needs it: a chunk holds one
journal's envelopes, and sequencer states are per journal. Deferrals are
rare; the read costs nothing otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.errors import GazetteError, with_type
from gazette_core.message.interfaces import Envelope, message_parts
from gazette_core.message.reader import NewMessage, read_uncommitted
from gazette_core.message.sequencer import QueueOutcome, Sequencer


class TxnError(GazetteError):
    """The application broke a rule of the transaction protocol."""


def unsequenced(envelopes: Sequence[Envelope], begin: int, err: Exception) -> TxnError:
    """The error for sequencing `envelopes[begin:]` failing with `err`, naming the envelope
    whose UUID cannot be read (the first, if none fails on its own)."""
    at = envelopes[begin]
    for env in envelopes[begin:]:
        try:
            message_parts(env.message)
        except Exception as own:  # the one the sequencer stumbled on
            at, err = env, own
            break
    return TxnError(f"sequencing the message at {at.journal}:{at.begin}: {with_type(err)}")


async def source_before(client: Any, new_message: NewMessage, base: cpb.Checkpoint,
                        start: int, env: Envelope, *, ring_size: int,
                        horizon_s: float) -> cpb.Checkpoint.Source | None:
    """The sequencer's checkpoint of `env`'s journal just before `env` was queued.

    `base` is a checkpoint of an earlier state (a commit's) and `start` where
    reading the journal carried on from it (start_offsets); None when nothing
    of the journal had been queued before `env`.
    """
    journal = env.journal
    seeded = cpb.Checkpoint()
    if journal in base.sources:
        seeded.sources[journal].CopyFrom(base.sources[journal])
    sequencer = Sequencer(seeded, ring_size=ring_size)
    if start < env.begin:
        async for read in read_uncommitted(client, journal, start, new_message, end=env.begin):
            outcome = sequencer.queue_uncommitted(read)
            if outcome is QueueOutcome.ACK_COMMIT_REPLAY:
                name, begin, end = sequencer.replay_range()
                sequencer.start_replay(read_uncommitted(client, name, begin, new_message,
                                                        end=end))
            while await sequencer.step():
                pass
    checkpoint = sequencer.checkpoint(horizon_s)
    return checkpoint.sources.get(journal)
