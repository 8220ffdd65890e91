"""`gazctl journals append`: stdin or a file appended to selected journals.

With the default framing `none` the whole input is one atomic append to one
journal; with `lines` or `fixed` each record is its own append, mapped to a
journal as `gazctl.records` describes, through an AppendService.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import typer

from gazctl.commands.selection import matched_journals, require_selector
from gazctl.config import BrokerAddress, RequiredSelector, Timeout, run
from gazctl.records import Framing, Mapper, Mapping, check_options, records
from gazctl.render import stdout
from gazctl.usage import UsageError
from gazette_core.broker.client.append_service import AppendService, AsyncAppend
from gazette_core.broker.client.appender import append_retrying
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import ValidationError

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub


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
    """Append the input to journals of the selection: whole, or record by record."""
    check_options(framing, mapping, b64)
    sel = require_selector(selector)
    if framing is Framing.none:
        _append_whole(sel, selector, input_path, broker, timeout)
        return
    source = sys.stdin.buffer if input_path == "-" else _open(input_path)

    async def body(stub: JournalAsyncStub) -> tuple[int, int, int]:
        journals = [j.spec.name for j in await matched_journals(stub, sel, selector)]
        return await _append_records(stub, source, Mapper(mapping, journals, framing, b64))

    count, size, used = run(broker, body, timeout)
    stdout.print(f"appended {count} record(s), {size} bytes, to {used} journal(s)",
                 highlight=False)


def _append_whole(sel: pb.LabelSelector, selector: str, input_path: str,
                  broker: str | None, timeout: str) -> None:
    data = sys.stdin.buffer.read() if input_path == "-" else _read(input_path)

    async def body(stub: JournalAsyncStub) -> pb.AppendResponse:
        journals = await matched_journals(stub, sel, selector)
        journal = random.choice(journals).spec.name
        return await append_retrying(stub, journal, data)

    resp = run(broker, body, timeout)
    c = resp.commit
    stdout.print(f"appended {c.end - c.begin} bytes to {c.journal} at offsets "
                 f"[{c.begin}, {c.end})", highlight=False)


async def _append_records(stub: JournalAsyncStub, source: BinaryIO, mapper: Mapper
                          ) -> tuple[int, int, int]:
    """Each record appended on its own, in input order per journal; (records, bytes, journals)."""
    count = size = 0
    used: set[str] = set()
    pending: dict[int, AsyncAppend] = {}
    key: bytes | None = None
    async with AppendService(stub) as service:
        async for record in records(source, mapper.framing):
            if mapper.keyed and key is None:
                key = mapper.key_of(record)
                continue
            journal = mapper.pick(key)
            key = None
            handle = service.enqueue(journal, record)
            pending[id(handle)] = handle
            count, size = count + 1, size + len(record)
            used.add(journal)
    if key is not None:
        raise ValidationError("--input", "the input ended after a key record with no record")
    for handle in pending.values():
        await handle
    return count, size, len(used)


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
