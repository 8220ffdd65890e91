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
from gazctl.config import BrokerAddress, RequiredSelector, Timeout, run
from gazctl.interrupts import handling
from gazctl.render import stderr
from gazctl.timeflags import parse_time, since_to_unix
from gazctl.usage import UsageError
from gazette_core.broker.client.journals import fetch_write_head, list_journals
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.suspend_ext import fully_suspended
from gazette_core.errors import GazetteError, ValidationError

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub


def read(
    selector: str = RequiredSelector,
    output_file: str = typer.Option("-", "--output-file",
                                    help="Write the content to this file; - for stdout."),
    old_output: str | None = typer.Option(None, "-o", "--output", hidden=True,
                                          help="Refused: -o is an output format elsewhere."),
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
                                                  "this duration, e.g. 2h, or seconds."),
    count: int = typer.Option(0, "-c", "--count", min=0,
                              help="Stop after this many newline-delimited records."),
    broker: str | None = BrokerAddress,
    timeout: str = Timeout,
) -> None:
    """Read journals matching the selector; output is raw journal content.

    Exits 3 when the selector matches no journal (-b waits for some instead).
    """
    if old_output is not None:
        raise UsageError("-o/--output", "journals read has no output formats; write its "
                         f"content to a file with --output-file {old_output}")
    sel = require_selector(selector)
    if from_time and since:
        raise UsageError("--since", "use either --from or --since, not both")
    begin = parse_time(from_time, "--from") or since_to_unix(since)
    starts = _load_offsets(offsets)
    # Both destinations are checked before anything is read: content read and then
    # lost to a bad path could not be read again from the same offsets.
    if offsets_out:
        _check_writable(offsets_out)
    out = _open_output(output_file)
    # Journals without a start offset in `starts` start at the template's.
    template = pb.ReadRequest(offset=-1 if tail else 0, block=block, begin_mod_time=begin)
    sink = Output(out, count)
    finals: dict[str, int] = {}
    try:
        # SIGTERM (a supervisor stopping us) ends the read like Ctrl-C does, so the
        # final offsets are still written.
        with handling(signal.SIGTERM):
            if block:
                run(broker, lambda stub: _follow(stub, sel, selector, sink, template, starts,
                                                 finals), timeout)
            else:
                run(broker, lambda stub: _read_once(stub, sel, selector, sink, template,
                                                    starts, finals), timeout)
    finally:
        if out is not sys.stdout.buffer:
            out.close()
        if offsets_out:
            _save_offsets(offsets_out, {**starts, **finals}, same=offsets == offsets_out)
    if output_file != "-":
        stderr.print(f"wrote {sink.written} bytes to {output_file}", highlight=False)


def _check_writable(path: str) -> None:
    """Fail now if `--offsets-out` could not be written at the end."""
    target = Path(path)
    if target.is_dir():
        raise UsageError("--offsets-out", f"{path!r} is a directory")
    probe = target.with_name(target.name + ".temp")
    try:
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise UsageError("--offsets-out", f"cannot write {path!r}: {exc.strerror}") from None


def _open_output(path: str) -> BinaryIO:
    if path == "-":
        return sys.stdout.buffer
    try:
        return open(path, "wb")
    except OSError as exc:
        raise UsageError("--output-file", f"cannot write {path!r}: {exc.strerror}") from None


async def _follow(stub: JournalAsyncStub, sel: pb.LabelSelector, text: str, out: Output,
                  template: pb.ReadRequest, starts: dict[str, int],
                  finals: dict[str, int]) -> None:
    if starts:
        listed = (await list_journals(stub, sel)).journals
        await warn_past_heads(stub, [j.spec.name for j in listed if not fully_suspended(j.spec)],
                              starts)
    await follow(stub, sel, text, out, template, starts, finals)


async def warn_past_heads(stub: JournalAsyncStub, names: list[str],
                          starts: dict[str, int]) -> None:
    """Say on stderr which journals an `--offsets` file starts past their write head.

    Nothing of such a journal is read until it grows past that offset; the usual
    cause is an offsets file of another cluster, or of a journal deleted and
    created again.
    """
    ahead = [name for name in names if starts.get(name, 0) > 0]
    heads = await asyncio.gather(*(fetch_write_head(stub, name) for name in ahead))
    for name, head in zip(ahead, heads, strict=True):
        if starts[name] > head:
            stderr.print(f"warning: {name} starts at offset {starts[name]}, past its write "
                         f"head {head}; nothing is read from it until it grows past "
                         f"{starts[name]}", highlight=False, markup=False)


async def _read_once(stub: JournalAsyncStub, sel: pb.LabelSelector, text: str, out: Output,
                     template: pb.ReadRequest, starts: dict[str, int],
                     finals: dict[str, int]) -> None:
    """Read each journal `sel` matches now up to its write head (or until --count is met)."""
    journals = [j.spec.name for j in await matched_journals(stub, sel, text)
                if not fully_suspended(j.spec)]
    await warn_past_heads(stub, journals, starts)
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


def _load_offsets(path: str) -> dict[str, int]:
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise UsageError("--offsets", f"cannot read {path!r}: {exc.strerror} "
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
    try:
        temp.write_text(json.dumps(dict(sorted(offsets.items())), indent=2) + "\n")
        if same and target.exists():
            os.replace(target, target.with_name(target.name + ".previous"))
        os.replace(temp, target)
    except OSError as exc:
        raise GazetteError(f"--offsets-out: cannot write {path!r}: {exc.strerror}") from None
