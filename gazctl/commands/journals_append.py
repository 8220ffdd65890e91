"""`gazctl journals append`: one atomic append of stdin or a file to a selected journal."""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from gazctl.commands.selection import matched_journals, require_selector
from gazctl.config import BrokerAddress, Selector, run
from gazctl.render import stdout
from gazette_core.broker.client.appender import append_retrying
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import ValidationError

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub


def append(
    selector: str = Selector,
    input_path: str = typer.Option("-", "-i", "--input", help="Input file; - for stdin."),
    broker: str | None = BrokerAddress,
) -> None:
    """Append the whole input atomically to one journal of the selection (chosen at random)."""
    sel = require_selector(selector)
    data = sys.stdin.buffer.read() if input_path == "-" else _read(input_path)

    async def body(stub: JournalAsyncStub) -> pb.AppendResponse:
        journals = await matched_journals(stub, sel, selector)
        journal = random.choice(journals).spec.name
        return await append_retrying(stub, journal, data)

    resp = run(broker, body)
    c = resp.commit
    stdout.print(f"appended {c.end - c.begin} bytes to {c.journal} at offsets "
                 f"[{c.begin}, {c.end})", highlight=False)


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ValidationError("--input", f"cannot read {path!r}: {exc.strerror}") from None
