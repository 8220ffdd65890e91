"""A rich progress bar over a playback, shown only when attached to a terminal.

Recovery of a large log can take a while; a bar with bytes, rate and ETA
tells an operator it is moving. Off a terminal (logs, pipes) nothing is
drawn, so output stays clean.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

if TYPE_CHECKING:
    from gazette_core.broker.client.routing import JournalClient
    from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
    from gazette_core.consumer.recoverylog.player import Player, Resolved

REFRESH_S = 0.25


async def play_with_progress(player: Player, hints: rpb.FSMHints, directory: str,
                             client: JournalClient, console: Console | None = None
                             ) -> Resolved:
    """`player.play(...)`, drawing its progress on `console` when it is a terminal."""
    console = console or Console(stderr=True)
    if not console.is_terminal:
        return await player.play(hints, directory, client)
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), DownloadColumn(),
               TransferSpeedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task(f"playing {escape(hints.log)}", total=None)
        playing = asyncio.ensure_future(player.play(hints, directory, client))
        try:
            while not playing.done():
                _update(bar, task, player)
                await asyncio.wait({playing}, timeout=REFRESH_S)
        finally:
            playing.cancel()  # No-op once done; ends playback if we were cancelled.
        _update(bar, task, player)
        return playing.result()


def _update(bar: Progress, task: TaskID, player: Player) -> None:
    p = player.progress
    span = max(0, p.target_head - p.start_offset)
    done = span if p.at_head else max(0, min(span, p.offset - p.start_offset))
    bar.update(task, total=span or None, completed=done)
