"""Recovery of a shard's store from its recovery log (docs/design/recoverylog.md#recovery).

Every replica, standby or primary, picks hints (primary, else the first
stored backup, else empty hints of the shard's own log), checks that the log
is a recovery log, and plays it into a fresh temporary directory under the
data directory, tailing it once at the head. Promotion injects the hand-off
as a new author, so the log is fenced against the previous primary, and the
directory is made live for a Recorder of that author.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gazette_core.broker.client.journals import list_journals
from gazette_core.broker.client.routing import target_for
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.recoverylog import hints_store
from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.consumer.recoverylog.author import new_author
from gazette_core.consumer.recoverylog.player import Player, Resolved
from gazette_core.consumer.recoverylog.recorder import Recorder
from gazette_core.errors import GazetteError
from gazette_core.tasks import cancel_and_wait

if TYPE_CHECKING:
    import aetcd

RECOVERY_LOG_CONTENT_TYPE = "application/x-gazette-recoverylog"


class RecoveryError(GazetteError):
    """The recovery log cannot be used (missing, or not a recovery log)."""


async def pick_recovery_hints(etcd: aetcd.Client, spec: cpb.ShardSpec,
                              log: str) -> rpb.FSMHints:
    """Primary hints, else the first stored backup, else empty hints of `log`."""
    resp = await hints_store.get_hints(etcd, spec)
    return hints_store.pick_hints(resp, log)


async def check_recovery_log(client: Any, log: str) -> None:
    """`log` exists and is labelled as a recovery log."""
    selector = pb.LabelSelector(include=pb.LabelSet(labels=[pb.Label(name="name", value=log)]))
    stub = target_for(client, log, primary=False).stub
    resp = await list_journals(stub, selector)
    specs = [j.spec for j in resp.journals if j.spec.name == log]
    if not specs:
        raise RecoveryError(f"recovery log {log!r} does not exist")
    types = [lbl.value for lbl in specs[0].labels.labels if lbl.name == "content-type"]
    if types != [RECOVERY_LOG_CONTENT_TYPE]:
        raise RecoveryError(
            f"journal {log!r} is not a recovery log: its content-type is "
            f"{types[0] if types else 'unset'!r}, want {RECOVERY_LOG_CONTENT_TYPE!r}")


def temp_directory(data_dir: str, shard_id: str) -> str:
    """A new directory `<id with / as _>-XXXX` under `data_dir`."""
    os.makedirs(data_dir, exist_ok=True)
    return tempfile.mkdtemp(prefix=shard_id.replace("/", "_") + "-", dir=data_dir)


@dataclass
class Promoted:
    """A played and handed-off log, with the recorder that now owns it."""

    resolved: Resolved
    recorder: Recorder
    hints: rpb.FSMHints  # FSM hints at the hand-off: the recovered state


class Playback:
    """Playback of one recovery log, tailing it until `promote()`."""

    def __init__(self, client: Any, hints: rpb.FSMHints, directory: str) -> None:
        self.client = client
        self.hints = hints
        self.directory = directory
        self.player = Player()
        self._task: asyncio.Task[Resolved] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(
            self.player.play(self.hints, self.directory, self.client),
            name=f"play {self.hints.log}")

    async def tailing(self) -> None:
        """Return once playback first reached the write head (or raise its failure)."""
        assert self._task is not None
        waiter = asyncio.ensure_future(self.player.tailing.wait())
        try:
            await asyncio.wait({waiter, self._task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
        if self._task.done() and not self.player.tailing.is_set():
            self._task.result()

    def failed(self) -> asyncio.Task[Resolved]:
        assert self._task is not None
        return self._task

    async def promote(self) -> Promoted:
        """Hand the log off to a new author at its head, and start that author's recorder."""
        assert self._task is not None
        author = new_author()
        self.player.inject_handoff(author)
        resolved = await self._task
        hints = resolved.fsm.build_hints(resolved.log)
        recorder = await Recorder.start(resolved.log, resolved.fsm, author,
                                        resolved.directory, self.client)
        return Promoted(resolved, recorder, hints)

    async def cancel(self) -> None:
        """Abandon playback (its directory is removed)."""
        if self._task is not None and not self._task.done():
            try:
                await cancel_and_wait(self._task)
            except Exception:
                pass  # abandoned: why it failed no longer matters
