"""`gazctl journals read`: copy selected journals' content to stdout or a file.

Without -b the journals matching the selector are listed once, each is read
to its write head and the command exits. With -b the selector is watched:
readers follow new commits, journals that start matching later are read too,
and the readers of journals that stop matching are let go, until interrupted
(see read_watch.py). Start offsets may come from an `--offsets` file and
final offsets go to `--offsets-out`, so a cron job can pick up where the
last run stopped (read_offsets.py). With --committed the journals' committed
messages are printed rather than their bytes (read_committed.py). The reads
themselves are read_job.py's.

As in Go's gazctl, -o names the file written; only names that are output
formats of other commands are refused, since they would be a slip.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import BinaryIO

import typer

from gazctl.commands.read_committed import message_class
from gazctl.commands.read_job import Job
from gazctl.commands.read_offsets import check_writable, load_offsets, save_offsets
from gazctl.commands.read_watch import Output
from gazctl.commands.selection import require_selector
from gazctl.config import broker_address, run
from gazctl.file_root import FileRoot, resolve_file_root
from gazctl.interrupts import handling
from gazctl.options import FORMAT_WORDS, BrokerAddress, RequiredSelector, Timeout
from gazctl.render import stderr
from gazctl.timeflags import parse_time, since_to_unix
from gazctl.usage import UsageError
from gazette_core.broker.protocol import protocol_pb2 as pb


def read(
    selector: str = RequiredSelector,
    output: str = typer.Option(
        "-", "-o", "--output", "--output-file",
        help="File to write to, created or truncated; - for stdout. A file, as in Go's "
             "gazctl, not an output format: json, yaml, table and the other format names "
             "are refused (write ./json for a file of that name)."),
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
                              help="Stop after this many newline-delimited records (messages "
                                   "with --committed)."),
    committed: bool = typer.Option(
        False, "--committed",
        help="Print only committed messages, each once, as consumers see them: pending and "
             "rolled-back messages, duplicates and ACKs are left out. Needs journals whose "
             "content-type has a message framing (JSON lines, CSV, protobuf). While a "
             "transaction is open at the end, --offsets-out keeps the offset of its first "
             "message, and messages printed after it are printed again by a read resuming "
             "there."),
    message_type: str = typer.Option(
        "", "--message-type",
        help="With --committed: the generated protobuf class (package.module:Class, with a "
             "uuid field) of application/x-protobuf-fixed journals."),
    file_root: str | None = FileRoot,
    broker: str | None = BrokerAddress,
    timeout: str = Timeout,
) -> None:
    """Read journals matching the selector; output is raw journal content.

    With --committed it is their committed messages instead, each as it was written
    (e.g. a JSON line), sequenced as consumers sequence them: with -b a transaction
    is printed when its ACK arrives. --tail, --offsets, --from and --since say where
    that sequencing starts: of a transaction begun before, only the messages after
    the start are printed.

    When the brokers' file root is known (--file-root), gazctl reads persisted
    fragments itself: file:// ones from that directory, others from the URLs the
    broker signs; one it cannot read so is read through the broker.

    Exits 3 when the selector matches no journal (-b waits for some instead).
    """
    sel = require_selector(selector)
    _check_output_name(output)
    if from_time and since:
        raise UsageError("--since", "use either --from or --since, not both")
    begin = parse_time(from_time, "--from") or since_to_unix(since)
    proto = message_class(committed, message_type)
    root = _file_root(file_root, broker)
    starts = load_offsets(offsets)
    # Both destinations are checked before anything is read: content read and then
    # lost to a bad path could not be read again from the same offsets.
    if offsets_out:
        check_writable(offsets_out)
    out = _open_output(output)
    # Journals without a start offset in `starts` start at the template's.
    job = Job(sel, selector, Output(out, count), starts, committed, proto, root,
              pb.ReadRequest(offset=-1 if tail else 0, block=block, begin_mod_time=begin,
                             do_not_proxy=root is not None))
    try:
        # SIGTERM (a supervisor stopping us) ends the read like Ctrl-C does, so the
        # final offsets are still written.
        with handling(signal.SIGTERM):
            run(broker, job.run, timeout)
    finally:
        if out is not sys.stdout.buffer:
            out.close()
        if offsets_out:
            save_offsets(offsets_out, {**starts, **job.finals}, same=offsets == offsets_out)
    if output != "-":
        stderr.print(f"wrote {job.out.written} bytes to {output}", highlight=False)


def _check_output_name(path: str) -> None:
    if path.lower() in FORMAT_WORDS:
        raise UsageError("-o/--output", f"{path!r} is an output format of other commands, but "
                         "journals read writes raw content to the file -o names; to write a "
                         f"file named {path}, pass -o ./{path}")


def _file_root(flag: str | None, broker: str | None) -> str | None:
    root, where = resolve_file_root(flag, broker_address(broker))
    if root is not None and not Path(root).is_dir():
        raise UsageError("--file-root", f"{root!r} (from {where}) is not a directory (it must "
                                        "be the brokers' --broker.file-root)")
    return root


def _open_output(path: str) -> BinaryIO:
    if path == "-":
        return sys.stdout.buffer
    try:
        return open(path, "wb")
    except OSError as exc:
        raise UsageError("-o/--output", f"cannot write {path!r}: {exc.strerror}") from None
