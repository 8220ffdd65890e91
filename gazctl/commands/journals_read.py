"""`gazctl journals read`: copy selected journals' content to stdout or a file.

Without -b the journals matching the selector are listed once, each is read
to its write head and the command exits. With -b the selector is watched:
readers follow new commits, journals that start matching later are read too,
and the readers of journals that stop matching are let go, until interrupted
(see read_watch.py). Start offsets may come from an `--offsets` file and
final offsets go to `--offsets-out`, so a cron job can pick up where the
last run stopped.
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

from gazctl.commands.read_watch import Output, follow, read_one
from gazctl.commands.selection import matched_journals, require_selector
from gazctl.config import BrokerAddress, Selector, Timeout, run
from gazctl.render import stderr
from gazctl.timeflags import parse_time, since_to_unix
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.suspend_ext import fully_suspended
from gazette_core.errors import ValidationError

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub


def read(
    selector: str = Selector,
    output: str = typer.Option("-", "-o", "--output", help="Output file; - for stdout."),
    block: bool = typer.Option(False, "-b", "--block",
                               help="Keep waiting for new content at the write head, and "
                                    "read journals that start matching the selector."),
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
    # Journals without a start offset in `starts` start at the template's.
    template = pb.ReadRequest(offset=-1 if tail else 0, block=block, begin_mod_time=begin)
    out: BinaryIO = sys.stdout.buffer if output == "-" else open(output, "wb")  # noqa: SIM115
    sink = Output(out, count)
    finals: dict[str, int] = {}
    # SIGTERM (a supervisor stopping us) ends the read like Ctrl-C does, so the
    # final offsets are still written.
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        if block:
            run(broker, lambda stub: follow(stub, sel, selector, sink, template, starts, finals),
                timeout)
        else:
            run(broker, lambda stub: _read_once(stub, sel, selector, sink, template, starts,
                                                finals), timeout)
    finally:
        signal.signal(signal.SIGTERM, previous)
        if out is not sys.stdout.buffer:
            out.close()
        if offsets_out:
            _save_offsets(offsets_out, {**starts, **finals}, same=offsets == offsets_out)
    if output != "-":
        stderr.print(f"wrote {sink.written} bytes to {output}", highlight=False)


async def _read_once(stub: JournalAsyncStub, sel: pb.LabelSelector, text: str, out: Output,
                     template: pb.ReadRequest, starts: dict[str, int],
                     finals: dict[str, int]) -> None:
    """Read each journal `sel` matches now up to its write head (or until --count is met)."""
    journals = [j.spec.name for j in await matched_journals(stub, sel, text)
                if not fully_suspended(j.spec)]
    readers = []
    for name in journals:
        req = pb.ReadRequest()
        req.CopyFrom(template)
        req.journal, req.offset = name, starts.get(name, template.offset)
        readers.append(asyncio.ensure_future(read_one(stub, req, out, finals)))
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
