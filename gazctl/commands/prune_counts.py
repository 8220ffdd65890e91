"""The summary table both prune commands print: their own rows, then the fragments' tallies.

`journals prune` and `shards prune` count the same outcomes of their deletes;
they differ in what they count first (journals, or shards and their logs).
"""

from __future__ import annotations

from typing import Protocol

from gazctl.render import humanize_bytes, table


class Tally(Protocol):
    """The fragment counts of a prune job's summary."""

    @property
    def fragments(self) -> int: ...
    @property
    def bytes_total(self) -> int: ...
    @property
    def fragments_pruned(self) -> int: ...
    @property
    def bytes_pruned(self) -> int: ...
    @property
    def already_gone(self) -> int: ...
    @property
    def bytes_already_gone(self) -> int: ...
    @property
    def fragments_kept(self) -> int: ...
    @property
    def bytes_kept(self) -> int: ...
    @property
    def permission_denied(self) -> int: ...
    @property
    def failed(self) -> int: ...


def counts_table(head: list[list[str]], s: Tally) -> None:
    """Print `head`'s rows, then a row per fragment count, under Count and Bytes."""
    # One row per count, so the table stays narrow enough for any terminal.
    table(["", "Count", "Bytes"], [
        *head,
        ["Fragments", str(s.fragments), humanize_bytes(s.bytes_total)],
        ["Pruned", str(s.fragments_pruned), humanize_bytes(s.bytes_pruned)],
        ["Already gone", str(s.already_gone), humanize_bytes(s.bytes_already_gone)],
        ["Kept", str(s.fragments_kept), humanize_bytes(s.bytes_kept)],
        ["Permission denied", str(s.permission_denied), ""],
        ["Failed", str(s.failed), ""],
    ])
