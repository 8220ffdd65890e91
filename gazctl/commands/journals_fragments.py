"""`gazctl journals fragments`: the fragments of selected journals: a table, JSON lines or proto.

`-o proto` prints, as Go's gazctl does, one FragmentsResponse per journal in
protobuf text format (without the response header, which is per page here).
"""

from __future__ import annotations

import enum
import time
from typing import TYPE_CHECKING

import typer
from google.protobuf import text_format

from gazctl.commands.selection import NoMatchError, selector_of
from gazctl.config import run
from gazctl.options import BrokerAddress, OutputFormat, Selector, Timeout
from gazctl.render import (
    JournalProgress,
    humanize_bytes,
    journal_progress,
    json_line,
    message_dict,
    stdout,
    table,
)
from gazctl.timeflags import parse_duration, parse_time
from gazette_core.broker.client.journals import list_fragments, list_journals
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.durations_ext import from_seconds
from gazette_core.broker.protocol.fragment_ext import sum_to_hex
from gazette_core.broker.protocol.suspend_ext import fully_suspended

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

Listed = list[tuple[str, list[pb.FragmentsResponse._Fragment]]]  # per journal, in order


class Format(enum.StrEnum):
    table = "table"
    json = "json"
    proto = "proto"


def fragments(
    selector: str = Selector,
    output: Format = OutputFormat(Format.table),
    from_time: str = typer.Option("", "--from", help="Only fragments persisted at or after this "
                                                     "time (RFC 3339 or unix seconds; "
                                                     "unpersisted are kept)."),
    to_time: str = typer.Option("", "--to", help="Only fragments persisted at or before this "
                                                 "time (RFC 3339 or unix seconds)."),
    url_ttl_text: str = typer.Option(
        "0s", "--url-ttl", help="Include signed GET URLs valid this long: a duration like 1h, "
                                "or seconds."),
    broker: str | None = BrokerAddress,
    timeout: str = Timeout,
) -> None:
    """List fragments of the selected journals. JSON output is one fragment per line.

    Exits 3 when the selector matches no journal.
    """
    sel = selector_of(selector)
    begin, end = parse_time(from_time, "--from"), parse_time(to_time, "--to")
    url_ttl = parse_ttl(url_ttl_text)

    async def body(stub: JournalAsyncStub, progress: JournalProgress) -> Listed:
        out: Listed = []
        listed = (await list_journals(stub, sel)).journals
        if not listed:
            raise NoMatchError.of(selector)
        journals = [j for j in listed if not fully_suspended(j.spec)]
        progress.start(len(journals))
        for j in journals:
            req = pb.FragmentsRequest(journal=j.spec.name, begin_mod_time=begin,
                                      end_mod_time=end)
            if url_ttl:
                req.signatureTTL.CopyFrom(from_seconds(url_ttl))
            out.append((j.spec.name, await list_fragments(stub, req)))
            progress.advance()
        return out

    # The bar is gone (it is transient) before the table or JSON lines are printed.
    with journal_progress("Listing fragments") as progress:
        listed = run(broker, lambda stub: body(stub, progress), timeout)
    if output is Format.json:
        for _, frags in listed:
            for f in frags:
                json_line(message_dict(f))
    elif output is Format.proto:
        for _, frags in listed:
            stdout.out(text_format.MessageToString(pb.FragmentsResponse(fragments=frags)),
                       end="")
    else:
        cols = ["Journal", "Offset", "Length", "Persisted", "SHA1", "Compression", "Store",
                *(["URL"] if url_ttl else [])]
        table(cols, [_row(name, f, bool(url_ttl)) for name, frags in listed for f in frags])


def _row(journal: str, f: pb.FragmentsResponse._Fragment, with_url: bool) -> list[str]:
    spec = f.spec
    persisted = _ago(spec.mod_time) if spec.mod_time else ""
    row = [journal, str(spec.begin), humanize_bytes(spec.end - spec.begin), persisted,
           sum_to_hex(spec.sum)[:12] + "...", pb.CompressionCodec.Name(spec.compression_codec),
           spec.backing_store or "<unpersisted>"]
    return row + ([f.signed_url] if with_url else [])


def _ago(unix: int, now: float | None = None) -> str:
    secs = max(0, int(time.time() if now is None else now) - unix)
    for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute"), (1, "second")):
        if secs >= size:
            n = secs // size
            return f"{n} {unit}{'s' if n != 1 else ''} ago"
    return "0 seconds ago"


def parse_ttl(text: str) -> float:
    """Seconds from `--url-ttl`: a Go duration like 1h30m as in Go's gazctl, or bare seconds."""
    return parse_duration(text, "--url-ttl")
