"""ShardReplica: one local assignment of a shard, from recovery through serving as primary.

The service's resolver creates a replica per local assignment, `start()`s
it, `update()`s it as the spec or assignment changes (slot 0 means primary)
and `stop()`s it when the assignment goes. Its status moves only up:
BACKFILL while playing the recovery log, STANDBY once tailing it (straight
away without a log), PRIMARY once the store is restored, FAILED with the
error text if anything fails.

Promotion (docs/design/recoverylog.md#recovery): hand-off injected as a new author, a Recorder of
that author, `app.new_store`, `restore_checkpoint`, then (only for the
shard's own log) the recovered hints rotated into the backup slots, then
PRIMARY and the transaction loop.

Whatever the application raises (SystemExit included: see app.py) fails
this replica alone, with the method and place in its status; the process
and its other shards go on.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import tempfile
from typing import TYPE_CHECKING, Any, Protocol

from gazette_core.consumer.app import AppError, call, ours
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol.shard_spec_ext import recovery_log
from gazette_core.consumer.protocol.status_ext import failed_status, merge_status
from gazette_core.consumer.recovery import (
    Playback,
    Promoted,
    check_recovery_log,
    pick_recovery_hints,
    temp_directory,
)
from gazette_core.consumer.recoverylog import hints_store
from gazette_core.consumer.recoverylog.hints_timer import HintsTimer
from gazette_core.consumer.shard import Shard, ShardStoppedError
from gazette_core.consumer.txn.loop import TxnLoop
from gazette_core.errors import GazetteError, with_type
from gazette_core.tasks import cancel_and_wait, wait_unwound

if TYPE_CHECKING:
    import aetcd

    from gazette_core.consumer.recoverylog.progress import Progress
    from gazette_core.consumer.recoverylog.recorder import Recorder
    from gazette_core.consumer.store.interface import Store
    from gazette_core.keyspace.keyspace import KeyValue

log = logging.getLogger(__name__)

Code = cpb.ReplicaStatus


class ReplicaHost(Protocol):
    """What a replica needs from its consumer process (the ConsumerService)."""

    etcd: aetcd.Client
    journals: Any  # a JournalClient (routing client) to the brokers
    app: Any  # the Application
    config: Any  # hint_interval_s, max_hot_standbys, data_dir

    async def update_status(self, assignment_key: str, status: cpb.ReplicaStatus) -> None:
        """Max-merge `status` into the assignment under a ModRevision compare, retried."""

    # Optional: `observe_txn(stats: TxnStats) -> None`, called as each transaction's
    # commit and ACK appends resolve (for per-shard metrics).


def slot_of(assignment: KeyValue) -> int:
    return int(assignment.key.rsplit("#", 1)[1])


class ShardReplica:
    """One local replica of a shard; see the module docstring for its lifecycle."""

    def __init__(self, host: ReplicaHost, spec: KeyValue, assignment: KeyValue) -> None:
        self.host = host
        self.shard = Shard(_spec(spec), spec.key, assignment)
        self.status = cpb.ReplicaStatus()
        self.directory = ""
        self.recorder: Recorder | None = None
        self.store: Store | None = None
        self.loop: TxnLoop | None = None
        self._playback: Playback | None = None
        self._promoted = asyncio.Event()
        self._ready = asyncio.Event()
        self._ended = asyncio.Event()
        self._stopping = False
        self._step = "starting"  # where a failure happened, for its status
        self._task: asyncio.Task[None] | None = None
        self._stopped: asyncio.Future[None] | None = None
        if slot_of(assignment) == 0:
            self._promoted.set()

    @property
    def assignment(self) -> KeyValue:
        return self.shard.assignment

    @property
    def playback(self) -> Progress | None:
        """Recovery-log playback progress (bytes read, target head), while there is one."""
        return None if self._playback is None else self._playback.player.progress

    def start(self) -> None:
        """Begin recovery in the background."""
        self._task = asyncio.get_running_loop().create_task(
            self._serve(), name=f"shard {self.shard.id}")

    def update(self, spec: KeyValue, assignment: KeyValue) -> None:
        """A new spec or assignment revision; slot 0 promotes the replica."""
        self.shard.spec = _spec(spec)
        self.shard.assignment = assignment
        if slot_of(assignment) == 0:
            self._promoted.set()

    async def stop(self) -> None:
        """Stop gracefully: a primary commits or abandons its open transaction, never half.

        Then the recorder stops and the local directory is removed.
        """
        if self._stopped is None:
            self._stopped = asyncio.ensure_future(self._stop())
        await asyncio.shield(self._stopped)

    async def _stop(self) -> None:
        self._stopping = True
        if self.loop is not None:
            self.loop.stop()
        elif self._task is not None:
            self._task.cancel()
        if self._task is not None:
            await wait_unwound(self._task)
        await self._release()
        self._ended.set()  # Also when never started.

    async def abort(self) -> None:
        """Stop as a killed process would: no commit, no hand-off; local files removed."""
        self._stopping = True
        await cancel_and_wait(self._task)
        await self._release()

    async def wait_ready(self) -> None:
        """Return once the store is restored (this replica is primary)."""
        if self._ready.is_set():
            return
        waiter = asyncio.ensure_future(self._ready.wait())
        ended = asyncio.ensure_future(self._ended.wait())
        try:
            await asyncio.wait({waiter, ended}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
            ended.cancel()
        if not self._ready.is_set():
            raise ShardStoppedError(shard=self.shard.id, detail="stopped before it was ready")

    async def wait_read_through(self, offsets: dict[str, int]
                                ) -> tuple[dict[str, int], dict[str, int]]:
        """Wait until completed transactions read through `offsets` of source journals.

        Returns (read_through, publish_at); raises ShardStoppedError if the
        primary loop ends meanwhile.
        """
        await self.wait_ready()
        sources = {s.journal for s in self.shard.spec.sources}
        wanted = {j: o for j, o in offsets.items() if o and j in sources}
        while True:
            read_through, publish_at = self.shard.progress()
            if all(read_through.get(j, 0) >= o for j, o in wanted.items()):
                return read_through, publish_at
            if self._ended.is_set():
                raise ShardStoppedError(shard=self.shard.id, detail="the primary loop ended")
            await self.shard.progressed()

    # The replica's life.

    async def _serve(self) -> None:
        try:
            log_name = recovery_log(self.shard.spec)
            if log_name:
                self._step = f"playing recovery log {log_name}"
                await self._backfill(log_name)
            else:
                await self._set_status(cpb.ReplicaStatus(code=Code.STANDBY))
            await self._wait_promoted()
            self._step = "becoming primary"
            await self._serve_primary(log_name)
        except BaseException as err:
            if ours(err):
                raise
            # Whatever the app raised, SystemExit included, fails this shard alone.
            text = _error_text(err)
            if not isinstance(err, GazetteError):
                text = f"{self._step}: {text}"
            log.warning("shard %s failed: %s", self.shard.id, text, exc_info=True)
            await self._fail(text)
        finally:
            self._ended.set()
            self.shard.wake()

    async def _backfill(self, log_name: str) -> None:
        host = self.host
        hints = await pick_recovery_hints(host.etcd, self.shard.spec, log_name)
        await check_recovery_log(host.journals, hints.log)
        data_dir = os.path.abspath(getattr(host.config, "data_dir", "") or tempfile.gettempdir())
        self.directory = temp_directory(data_dir, self.shard.id)
        self._playback = Playback(host.journals, hints, self.directory)
        self._playback.start()
        await self._set_status(cpb.ReplicaStatus(code=Code.BACKFILL))
        await self._playback.tailing()
        await self._set_status(cpb.ReplicaStatus(code=Code.STANDBY))

    async def _wait_promoted(self) -> None:
        """Until slot 0 is ours; a playback failure while standing by fails the replica."""
        if self._playback is None:
            await self._promoted.wait()
            return
        waiter = asyncio.ensure_future(self._promoted.wait())
        try:
            await asyncio.wait({waiter, self._playback.failed()},
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
        if not self._promoted.is_set():
            self._playback.failed().result()

    async def _serve_primary(self, log_name: str) -> None:
        promoted: Promoted | None = None
        if self._playback is not None:
            promoted = await self._playback.promote()
            self.recorder = promoted.recorder
            self.shard.recovered_hints = promoted.hints
        host, shard = self.host, self.shard
        self.store = store = _checked_store(await call(host.app.new_store, shard,
                                                       self.recorder))
        checkpoint: cpb.Checkpoint = await call(store.restore_checkpoint,
                                                  name="restore_checkpoint")
        if promoted is not None and promoted.resolved.log == log_name:
            # Only now are these hints known to recover a usable store
            # (docs/design/recoverylog.md#when-hints-are-written).
            await hints_store.rotate_backup_hints(host.etcd, shard.spec, promoted.hints,
                                                  _guard(shard))
        await self._set_status(cpb.ReplicaStatus(code=Code.PRIMARY))
        self._ready.set()
        self._step = "running transactions"
        self.loop = TxnLoop(shard, host.app, store, host.journals, checkpoint,
                            recovery_log=log_name, hints=self._hints_timer(),
                            observe=getattr(host, "observe_txn", None))
        if not self._stopping:
            await self.loop.run()

    def _hints_timer(self) -> HintsTimer | None:
        if self.recorder is None:
            return None
        host, shard = self.host, self.shard

        async def store(hints: Any) -> bool:
            return await hints_store.store_primary_hints(host.etcd, shard.spec, hints,
                                                         _guard(shard))

        return HintsTimer(self.recorder, store, float(getattr(host.config, "hint_interval_s",
                                                              300.0)))

    async def _set_status(self, status: cpb.ReplicaStatus) -> None:
        self.status = merge_status(self.status, status)
        await self.host.update_status(self.shard.assignment.key, status)

    async def _fail(self, text: str) -> None:
        try:
            await self._set_status(failed_status(text))
        except Exception as status_err:
            log.warning("shard %s: recording its failure: %s", self.shard.id, status_err)

    async def _release(self) -> None:
        """Close the store, stop the recorder and remove the local directory."""
        if self._playback is not None:
            await self._playback.cancel()
        if self.store is not None:
            try:
                await call(self.store.destroy, name="destroy")
            except AppError as err:
                log.warning("shard %s: closing its store: %s", self.shard.id, err)
        if self.recorder is not None:
            try:
                await self.recorder.stop()
            except Exception as err:
                log.info("shard %s: stopping its recorder: %s", self.shard.id, err)
        if self.directory:
            await asyncio.to_thread(shutil.rmtree, self.directory, True)


STORE_METHODS = ("restore_checkpoint", "start_commit", "destroy")


def _checked_store(store: Any) -> Store:
    """What new_store returned, if it is a Store; else an AppError saying what it was."""
    if all(callable(getattr(store, m, None)) for m in STORE_METHODS):
        return store  # type: ignore[no-any-return]
    shown = "None" if store is None else f"a {type(store).__name__}"
    raise AppError("new_store", f"returned {shown}, expected a Store "
                                f"(with {', '.join(STORE_METHODS)})")


def _error_text(err: BaseException) -> str:
    """A shard's error as its status shows it: where it happened and the exception's type.

    AppErrors and the library's own errors already say where; anything else
    says its type, and `_fail` adds the step of the replica's life it failed in.
    """
    return str(err) if isinstance(err, GazetteError) else with_type(err)


def _spec(kv: KeyValue) -> cpb.ShardSpec:
    spec = kv.decoded
    if not isinstance(spec, cpb.ShardSpec):
        raise TypeError(f"{kv.key} does not hold a ShardSpec")
    return spec


def _guard(shard: Shard) -> hints_store.AssignmentGuard:
    """The shard's current assignment, guarding its hints writes."""
    return hints_store.AssignmentGuard(shard.assignment.key, shard.assignment.create_revision)
