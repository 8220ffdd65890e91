"""`gazctl journals read`: copy selected journals' content to stdout or a file.

Without -b each journal is read to its write head and the command exits; with
-b readers keep following new commits until interrupted.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING, BinaryIO

import typer

from gazctl.commands.selection import matched_journals, require_selector
from gazctl.config import BrokerAddress, Selector, run
from gazctl.render import stderr
from gazette_core.broker.client.retry_reader import RetryReader
from gazette_core.broker.protocol import protocol_pb2 as pb

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub


def read(
    selector: str = Selector,
    output: str = typer.Option("-", "-o", "--output", help="Output file; - for stdout."),
    block: bool = typer.Option(False, "-b", "--block",
                               help="Keep waiting for new content at the write head."),
    tail: bool = typer.Option(False, "--tail", help="Start at the write head, not offset 0."),
    broker: str | None = BrokerAddress,
) -> None:
    """Read journals matching the selector; output is raw journal content."""
    sel = require_selector(selector)
    out: BinaryIO = sys.stdout.buffer if output == "-" else open(output, "wb")  # noqa: SIM115
    try:
        total = run(broker, lambda stub: _read_all(stub, sel, selector, out, block, tail))
    finally:
        if out is not sys.stdout.buffer:
            out.close()
    if output != "-":
        stderr.print(f"wrote {total} bytes to {output}", highlight=False)


async def _read_all(stub: JournalAsyncStub, sel: pb.LabelSelector, text: str,
                    out: BinaryIO, block: bool, tail: bool) -> int:
    journals = await matched_journals(stub, sel, text)
    lock = asyncio.Lock()
    totals = await asyncio.gather(*(
        _read_one(stub, j.spec.name, out, lock, block, tail) for j in journals
        if not (j.spec.HasField("suspend") and j.spec.suspend.level == pb.JournalSpec.Suspend.FULL)
    ))
    return sum(totals)


async def _read_one(stub: JournalAsyncStub, journal: str, out: BinaryIO,
                    lock: asyncio.Lock, block: bool, tail: bool) -> int:
    """Copy one journal to the shared output, a whole fragment range at a time.

    The broker streams content in small chunks that may split an append, but a
    fragment never does: holding the output from a fragment's first chunk to its
    end keeps other journals' content from landing inside an append.
    """
    req = pb.ReadRequest(journal=journal, offset=-1 if tail else 0, block=block)
    reader = RetryReader(stub, req)
    total = 0
    held = False
    try:
        async for chunk in reader:
            if not held:
                await lock.acquire()
                held = True
            out.write(chunk)
            out.flush()
            total += len(chunk)
            if reader.offset >= reader.response.fragment.end:
                lock.release()
                held = False
    finally:
        reader.close()
        if held:
            lock.release()
    return total
