"""`gazctl journals read`: copy selected journals' content to stdout or a file.

Without -b each journal is read to its write head and the command exits; with
-b readers keep following new commits until interrupted. Start offsets may
come from an `--offsets` file and final offsets go to `--offsets-out`, so a
cron job can pick up where the last run stopped.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import typer

from gazctl.commands.selection import matched_journals, require_selector
from gazctl.config import BrokerAddress, Selector, Timeout, run
from gazctl.render import stderr
from gazctl.timeflags import parse_time, since_to_unix
from gazette_core.broker.client.retry_reader import RetryReader
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.suspend_ext import fully_suspended
from gazette_core.errors import ValidationError

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub


class Output:
    """The shared output: one journal's fragment at a time, and an optional record budget."""

    def __init__(self, out: BinaryIO, count: int) -> None:
        self.out = out
        self.lock = asyncio.Lock()
        self.remaining = count  # records still wanted; 0 means no limit
        self.limited = count > 0
        self.done = asyncio.Event()

    def write(self, chunk: bytes) -> int:
        """Write `chunk`, or its first records up to the budget; bytes written."""
        if self.limited:
            end = 0
            while self.remaining and (nl := chunk.find(b"\n", end)) >= 0:
                end, self.remaining = nl + 1, self.remaining - 1
            if not self.remaining:
                chunk = chunk[:end]
                self.done.set()
        self.out.write(chunk)
        self.out.flush()
        return len(chunk)


def read(
    selector: str = Selector,
    output: str = typer.Option("-", "-o", "--output", help="Output file; - for stdout."),
    block: bool = typer.Option(False, "-b", "--block",
                               help="Keep waiting for new content at the write head."),
    tail: bool = typer.Option(False, "--tail", help="Start at the write head, not offset 0."),
    offsets: str = typer.Option("", "--offsets",
                                help="JSON file of journal -> start offset (must exist)."),
    offsets_out: str = typer.Option("", "--offsets-out",
                                    help="Write each journal's final offset here as JSON."),
    from_time: str = typer.Option("", "--from", help="Skip fragments persisted before this "
                                                     "time (RFC 3339 or unix seconds)."),
    since: str = typer.Option("", "--since", help="Skip fragments persisted longer ago than "
                                                  "this duration, e.g. 2h."),
    count: int = typer.Option(0, "-c", "--count", min=0,
                              help="Stop after this many newline-delimited records."),
    broker: str | None = BrokerAddress,
    timeout: str = Timeout,
) -> None:
    """Read journals matching the selector; output is raw journal content."""
    sel = require_selector(selector)
    if from_time and since:
        raise ValidationError("--since", "use either --from or --since, not both")
    begin = parse_time(from_time, "--from") or since_to_unix(since)
    starts = _load_offsets(offsets)
    out: BinaryIO = sys.stdout.buffer if output == "-" else open(output, "wb")  # noqa: SIM115
    finals: dict[str, int] = {}
    # SIGTERM (a supervisor stopping us) ends the read like Ctrl-C does, so the
    # final offsets are still written.
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        total = run(broker, lambda stub: _read_all(stub, sel, selector, Output(out, count),
                                                   block, tail, begin, starts, finals), timeout)
    finally:
        signal.signal(signal.SIGTERM, previous)
        if out is not sys.stdout.buffer:
            out.close()
        if offsets_out:
            _save_offsets(offsets_out, {**starts, **finals}, same=offsets == offsets_out)
    if output != "-":
        stderr.print(f"wrote {total} bytes to {output}", highlight=False)


async def _read_all(stub: JournalAsyncStub, sel: pb.LabelSelector, text: str, out: Output,
                    block: bool, tail: bool, begin: int, starts: dict[str, int],
                    finals: dict[str, int]) -> int:
    journals = [j.spec.name for j in await matched_journals(stub, sel, text)
                if not fully_suspended(j.spec)]
    requests = [pb.ReadRequest(journal=name, offset=starts.get(name, -1 if tail else 0),
                               block=block, begin_mod_time=begin) for name in journals]
    readers = [asyncio.ensure_future(_read_one(stub, r, out, finals)) for r in requests]
    everyone = asyncio.gather(*readers, return_exceptions=True)
    enough = asyncio.ensure_future(out.done.wait())  # --count records were written
    try:
        waiters: list[asyncio.Future[Any]] = [enough, everyone]
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        enough.cancel()
        for reader in readers:
            reader.cancel()
        results = await everyone
    failures = [r for r in results if isinstance(r, BaseException)
                and not isinstance(r, asyncio.CancelledError)]
    if failures:
        raise failures[0]
    return sum(r for r in results if isinstance(r, int))


async def _read_one(stub: JournalAsyncStub, req: pb.ReadRequest, out: Output,
                    finals: dict[str, int]) -> int:
    """Copy one journal to the shared output, a whole fragment range at a time.

    The broker streams content in small chunks that may split an append, but a
    fragment never does: holding the output from a fragment's first chunk to its
    end keeps other journals' content from landing inside an append.
    """
    reader = RetryReader(stub, req)
    total = 0
    held = False
    try:
        async for chunk in reader:
            if not held:
                await out.lock.acquire()
                held = True
            if out.done.is_set():
                break
            written = out.write(chunk)
            total += written
            finals[req.journal] = reader.offset - (len(chunk) - written)
            if reader.offset >= reader.response.fragment.end:
                out.lock.release()
                held = False
        else:
            finals[req.journal] = max(reader.offset, reader.write_head or 0)
    finally:
        reader.close()
        if held:
            out.lock.release()
    return total


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def _load_offsets(path: str) -> dict[str, int]:
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise ValidationError("--offsets", f"cannot read {path!r}: {exc.strerror} "
                              "(create it containing {} to start from scratch)") from None
    except json.JSONDecodeError as exc:
        raise ValidationError("--offsets", f"{path!r} is not JSON: {exc}") from None
    if not isinstance(data, dict) or not all(
            isinstance(k, str) and isinstance(v, int) for k, v in data.items()):
        raise ValidationError("--offsets", f"{path!r} must map journal names to offsets")
    return data


def _save_offsets(path: str, offsets: dict[str, int], same: bool) -> None:
    """Write atomically (temp file, then rename); an overwritten input is kept as .previous."""
    target = Path(path)
    temp = target.with_name(target.name + ".temp")
    temp.write_text(json.dumps(dict(sorted(offsets.items())), indent=2) + "\n")
    if same and target.exists():
        os.replace(target, target.with_name(target.name + ".previous"))
    os.replace(temp, target)
