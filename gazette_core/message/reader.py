"""Read a journal as uncommitted message envelopes (no sequencing: see sequencer.py).

The journal's spec (looked up with List) names its framing by the
`content-type` label and is handed to `new_message` for each record, so an
application can pick the message type per journal. Each Envelope carries the
exact offsets [begin, end) of its record. Reads survive broker restarts
(RetryReader); should the broker jump over content (it was pruned), reading
resumes at the next record after the jump and a warning says so.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING

from gazette_core.broker.client.journals import list_journals
from gazette_core.broker.client.retry_reader import RetryReader
from gazette_core.broker.client.routing import target_for
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import GazetteError
from gazette_core.message.chunk_decode import (  # noqa: F401  (re-exported)
    ChunkDecoder,
    MessageDecodeError,
    NewMessage,
    NewMessageError,
)
from gazette_core.message.framing import Framing, journal_framing
from gazette_core.message.interfaces import Envelope
from gazette_core.message.splitter import Splitter

if TYPE_CHECKING:
    from gazette_core.broker.client.routing import JournalClient

log = logging.getLogger(__name__)



async def journal_spec(client: JournalClient, journal: str) -> pb.JournalSpec:
    """The current spec of `journal`; GazetteError when no such journal exists."""
    selector = pb.LabelSelector(include=pb.LabelSet(labels=[pb.Label(name="name", value=journal)]))
    resp = await list_journals(target_for(client, journal, primary=False).stub, selector)
    for entry in resp.journals:
        if entry.spec.name == journal:
            return entry.spec
    raise GazetteError(f"journal {journal!r} does not exist")


def _splitter(framing: Framing, journal: str, base: int) -> Splitter:
    splitter = framing.splitter()
    splitter.base, splitter.label = base, journal
    return splitter


async def read_uncommitted(
    client: JournalClient, journal: str, offset: int, new_message: NewMessage,
    *, end: int | None = None, block: bool = True, options: pb.ReadRequest | None = None,
    file_root: str | None = None, keep_records: bool = False,
) -> AsyncIterator[Envelope]:
    """Envelopes of `journal` from `offset` (-1: the write head) up to `end` if given.

    A blocking read without `end` never ends; a non-blocking one ends at the
    write head. A record cut short by the end of the read raises
    MessageDecodeError (appends are whole records, so it means corruption).
    `options` gives the read's other fields (do_not_proxy, begin_mod_time,
    min_etcd_revision), `file_root` is the RetryReader's, and with
    `keep_records` each envelope carries its record's bytes.
    The envelopes of read_uncommitted_batches, one by one.
    """
    batches = read_uncommitted_batches(
        client, journal, offset, new_message, end=end, block=block, options=options,
        file_root=file_root, keep_records=keep_records)
    try:
        async for batch in batches:
            for env in batch:
                yield env
    finally:
        await batches.aclose()


async def read_uncommitted_batches(
    client: JournalClient, journal: str, offset: int, new_message: NewMessage,
    *, end: int | None = None, block: bool = True, options: pb.ReadRequest | None = None,
    file_root: str | None = None, keep_records: bool = False,
) -> AsyncGenerator[list[Envelope], None]:
    """read_uncommitted's envelopes, one list per read chunk: the records complete in it.

    Same arguments, semantics and errors: a record that fails to decode raises
    after the list of the envelopes before it in its chunk. Messages of a
    StructMessage type are decoded a chunk at a time (chunk_decode.py), and
    `new_message` is then called once per read to learn the type.
    """
    spec = await journal_spec(client, journal)
    framing = journal_framing(spec)
    request = pb.ReadRequest()
    if options is not None:
        request.CopyFrom(options)
    request.journal, request.offset, request.block = journal, offset, block
    request.end_offset = end or 0
    splitter = _splitter(framing, journal, offset)
    decoder = ChunkDecoder(framing, spec, new_message, keep_records)
    async with RetryReader(client, request, file_root=file_root) as reader:
        async for chunk in reader:
            start = reader.offset - len(chunk)
            expected = splitter.position + splitter.pending
            if start != expected:
                if expected >= 0:  # Not merely the write head that -1 resolved to.
                    log.warning("reading %s jumped from offset %d to %d (%d bytes of a "
                                "partial record dropped)", journal, expected, start,
                                splitter.pending)
                splitter = _splitter(framing, journal, start)
            batch, error = decoder.decode(splitter, chunk)
            if batch:
                yield batch
            if error is not None:
                raise error
    if splitter.pending:
        raise MessageDecodeError(
            f"{journal} offset {splitter.position}: unexpected end of read inside a "
            f"{splitter.pending}-byte partial record")
