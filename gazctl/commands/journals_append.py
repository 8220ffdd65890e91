"""`gazctl journals append`: stdin or a file appended to selected journals.

With the default framing `none` the whole input is one atomic append to one
journal; with `lines` or `fixed` each record is its own append, mapped to a
journal as `gazctl.commands.append_records` describes, through an
AppendService. Records are sent as they arrive
(`gazctl.commands.append_chunks`), so a never-ending pipe streams; Ctrl-C
ends the input and flushes what was read. When a record fails, the error says
which records were committed (`gazctl.commands.append_ledger`).
"""

from __future__ import annotations

import asyncio
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import typer

from gazctl.commands.append_chunks import InputChunks
from gazctl.commands.append_ledger import Ledger
from gazctl.commands.append_records import Framing, Mapper, Mapping, check_options, records
from gazctl.commands.selection import matched_journals, require_selector
from gazctl.config import run
from gazctl.options import BrokerAddress, RequiredSelector, Timeout
from gazctl.render import stdout
from gazctl.routes import journal_client
from gazctl.usage import UsageError
from gazette_core.broker.client.append_service import AppendService
from gazette_core.broker.client.appender import append_retrying
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import ValidationError

if TYPE_CHECKING:
    from gazette_core.broker.client.routing import JournalClient
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub


@dataclass(frozen=True)
class Appended:
    records: int
    size: int
    journals: int
    interrupted: bool


def append(
    selector: str = RequiredSelector,
    input_path: str = typer.Option("-", "-i", "--input", help="Input file; - for stdin."),
    framing: Framing = typer.Option(Framing.none, "-f", "--framing",
                                    help="none: the whole input is one append; lines or fixed: "
                                         "each record is its own append."),
    mapping: Mapping = typer.Option(Mapping.random, "-m", "--mapping",
                                    help="How records pick journals; modulo and rendezvous "
                                         "read a key record before each record, direct a "
                                         "journal name."),
    b64: bool = typer.Option(False, "--base64", help="Keys (lines framing) are base64."),
    broker: str | None = BrokerAddress,
    timeout: str = Timeout,
) -> None:
    """Append the input to journals of the selection: whole, or record by record.

    Records are sent as they arrive, so `tail -F log | gazctl journals append -f lines`
    streams; Ctrl-C appends what was read, then exits. If a record fails, the error
    says which records were committed, and where.
    """
    check_options(framing, mapping, b64)
    sel = require_selector(selector)
    if framing is Framing.none:
        _append_whole(sel, selector, input_path, broker, timeout)
        return
    source = sys.stdin.buffer if input_path == "-" else _open(input_path)

    async def body(stub: JournalAsyncStub) -> Appended:
        listed = await matched_journals(stub, sel, selector)
        journals = [j.spec.name for j in listed]
        return await _append_records(journal_client(stub, listed), source,
                                     Mapper(mapping, journals, framing, b64))

    done = run(broker, body, timeout)
    stdout.print(f"{'interrupted: ' if done.interrupted else ''}appended {done.records} "
                 f"record(s), {done.size} bytes, to {done.journals} journal(s)", highlight=False)
    if done.interrupted:
        raise typer.Exit(130)  # as for any command ended by Ctrl-C


def _append_whole(sel: pb.LabelSelector, selector: str, input_path: str,
                  broker: str | None, timeout: str) -> None:
    data = sys.stdin.buffer.read() if input_path == "-" else _read(input_path)

    async def body(stub: JournalAsyncStub) -> pb.AppendResponse:
        journals = await matched_journals(stub, sel, selector)
        journal = random.choice(journals).spec.name
        return await append_retrying(journal_client(stub, journals), journal, data)

    resp = run(broker, body, timeout)
    c = resp.commit
    stdout.print(f"appended {c.end - c.begin} bytes to {c.journal} at offsets "
                 f"[{c.begin}, {c.end})", highlight=False)


async def _append_records(stub: JournalClient, source: BinaryIO, mapper: Mapper) -> Appended:
    """Each record appended as soon as it is read, in input order per journal.

    A failed record stops the reading; either way every record read is
    settled (committed or failed) before this returns or raises.
    """
    chunks = InputChunks(source)
    ledger = Ledger(on_failure=chunks.stop)
    async with AppendService(stub) as service:
        try:
            await _enqueue_all(chunks, mapper, service, ledger)
        finally:
            await _settle(ledger)
    if (failure := ledger.failure()) is not None:
        raise failure
    return Appended(ledger.count, ledger.size, len(ledger.journals), chunks.interrupted)


async def _enqueue_all(chunks: InputChunks, mapper: Mapper, service: AppendService,
                       ledger: Ledger) -> None:
    key: bytes | None = None
    async for batch in records(chunks, mapper.framing):
        for record in batch:
            if mapper.keyed and key is None:
                key = mapper.key_of(record)
                continue
            journal = mapper.pick(key)
            key = None
            ledger.add(journal, record, service.enqueue(journal, record))
    if key is not None and not chunks.stopped:  # a failure stops the input anywhere
        raise ValidationError("--input", "the input ended after a key record with no record")


async def _settle(ledger: Ledger) -> None:
    """Wait for every enqueued record; a Ctrl-C meanwhile does not drop them."""
    while True:
        try:
            await ledger.settle()
            return
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is None or task.uncancel() > 0:
                raise


def _open(path: str) -> BinaryIO:
    try:
        return open(path, "rb")
    except OSError as exc:
        raise UsageError("--input", f"cannot read {path!r}: {exc.strerror}") from None


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise UsageError("--input", f"cannot read {path!r}: {exc.strerror}") from None
