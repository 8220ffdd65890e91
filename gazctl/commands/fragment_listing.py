"""Listing the selected journals' fragments for the commands that hand them to a Spark job."""

from __future__ import annotations

from gazctl import logs
from gazctl.commands.selection import NoMatchError
from gazctl.config import run
from gazctl.render import journal_progress
from gazette_core.broker.protocol import protocol_pb2 as pb
from spark_jobs.selection import NothingMatched, Selection, fetch_selection


def list_selection(broker: str | None, sel: pb.LabelSelector, selector: str,
                   timeout: str, to_head: bool = False) -> Selection:
    """The journals `sel` matches with their fragments; suspended ones are noted on stderr.
    `to_head`: each journal's fragments reach its write head, as an export's read needs."""
    try:
        # The bar is transient and shown only when stdout is a terminal, so the notes,
        # warnings and summary after it come out exactly as they do without it.
        with journal_progress("Listing fragments") as progress:
            selection = run(broker, lambda stub: fetch_selection(
                stub, sel, selector, progress=progress, to_head=to_head), timeout)
    except NothingMatched as exc:
        raise NoMatchError(str(exc)) from None
    for name in selection.suspended:
        logs.note(f"skipped suspended journal {name}")
    return selection
