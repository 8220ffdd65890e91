"""The Persister: compresses completed spools and writes them to the journal's store.

Spools are queued when they roll (docs/design/fragments.md#persistence) and persisted in the
background to `stores[0]` of the journal's spec. Content addressing makes a
repeated write harmless, so an existing object counts as done and failures
are simply retried with back-off. `stop()` drains everything queued.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from gazette_core.broker import metrics
from gazette_core.broker.codecs import new_compressor
from gazette_core.broker.fragment.postfix import evaluate as evaluate_postfix
from gazette_core.broker.fragment.spool import Spool
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.fragment_ext import content_path
from gazette_core.broker.stores.metered import metered_store
from gazette_core.broker.stores.registry import get_store
from gazette_core.tasks import wait_unwound

log = logging.getLogger(__name__)

MAX_CONCURRENT_PERSISTS = 32
RETRY_DELAYS = (0.1, 0.5, 1.0, 5.0, 10.0, 30.0)
COMPRESS_CHUNK = 1 << 20

OnPersisted = Callable[[pb.Fragment], None]


@dataclass(slots=True)
class _Job:
    spool: Spool
    spec: pb.JournalSpec
    on_persisted: OnPersisted | None


class Persister:
    """Background persistence of completed spools, up to 32 at a time."""

    def __init__(
        self,
        file_root: str,
        concurrency: int = MAX_CONCURRENT_PERSISTS,
        retry_delays: tuple[float, ...] = RETRY_DELAYS,
        file_only: bool = False,
    ) -> None:
        self.file_root = file_root
        self.file_only = file_only  # --broker.file-only: every store is file:/// in file_root
        self._concurrency = concurrency
        self._retry_delays = retry_delays
        self._queue: asyncio.Queue[_Job] = asyncio.Queue()
        self._workers: list[asyncio.Task[None]] = []
        self._busy = 0  # jobs taken from the queue and not yet finished

    def start(self) -> None:
        """Start the background workers (idempotent)."""
        if not self._workers:
            self._workers = [
                asyncio.create_task(self._work(), name=f"persister-{i}")
                for i in range(self._concurrency)
            ]

    async def stop(self, timeout: float | None = None) -> int:
        """Persist everything queued, then stop the workers.

        With `timeout`, give up waiting after that many seconds (a store that
        never recovers must not hang shutdown forever); returns how many queued
        spools were left unpersisted.
        """
        self.start()  # Drain even if never started.
        try:
            async with asyncio.timeout(timeout):
                await self._queue.join()
        except TimeoutError:
            log.error("gave up persisting %d spool(s) after %.0fs",
                      self._queue.qsize() + self._busy, timeout)
        left = self._queue.qsize() + self._busy
        for worker in self._workers:
            worker.cancel()
        for worker in self._workers:
            await wait_unwound(worker)
        self._workers = []
        return left

    def enqueue(
        self, spool: Spool, spec: pb.JournalSpec, on_persisted: OnPersisted | None = None
    ) -> None:
        """Queue a completed spool for persistence under `spec` (copied as of now)."""
        own_spec = pb.JournalSpec()
        own_spec.CopyFrom(spec)
        self._queue.put_nowait(_Job(spool, own_spec, on_persisted))

    async def _work(self) -> None:
        while True:
            job = await self._queue.get()
            self._busy += 1
            try:
                await self._persist_with_retries(job)
            finally:
                self._busy -= 1
                self._queue.task_done()
            # Held until the next job arrives, the spool would keep its file open.
            del job

    async def _persist_with_retries(self, job: _Job) -> None:
        attempt = 0
        while True:
            try:
                persisted = await self.persist(job.spool, job.spec)
                break
            except Exception as exc:  # Any store failure is retried; the spool is kept.
                delay = self._retry_delays[min(attempt, len(self._retry_delays) - 1)]
                log.warning(
                    "persisting %s failed (retrying in %ss): %s",
                    content_path(job.spool.fragment), delay, exc,
                )
                attempt += 1
                await asyncio.sleep(delay)
        if persisted is not None and job.on_persisted is not None:
            try:
                job.on_persisted(persisted)
            except Exception:
                log.exception("on_persisted callback failed for %s", content_path(persisted))

    async def persist(self, spool: Spool, spec: pb.JournalSpec) -> pb.Fragment | None:
        """One attempt; returns the persisted fragment, or None when there is no store."""
        if not spec.fragment.stores:
            return None
        store = metered_store(get_store(spec.fragment.stores[0], self.file_root,
                                        self.file_only))
        fragment = pb.Fragment()
        fragment.CopyFrom(spool.fragment)
        fragment.path_postfix = _postfix(spool, spec)
        provider = metrics.store_provider(store.url)
        if not await metrics.observe_store(provider, "exist", store.exists(fragment)):
            data = await asyncio.to_thread(_compress, spool, fragment.compression_codec)
            offload = fragment.compression_codec == pb.GZIP_OFFLOAD_DECOMPRESSION
            encoding = "gzip" if offload else None
            await metrics.observe_store(provider, "persist", store.put(fragment, data, encoding))
            metrics.STORE_PERSISTED_BYTES.cell(provider).value += fragment.end - fragment.begin
        metrics.SPOOL_PERSISTED.value += 1
        fragment.backing_store = store.url
        fragment.mod_time = int(time.time())
        return fragment


def _postfix(spool: Spool, spec: pb.JournalSpec) -> str:
    """The path postfix the spec's `path_postfix_template` gives this spool.

    A template outside the supported subset raises, so the persist is retried
    (and logged) rather than written to a path the operator did not ask for.
    """
    return evaluate_postfix(spec.fragment.path_postfix_template, spool, spec)


def _compress(spool: Spool, codec: int) -> bytes:
    """The spool's committed content compressed with `codec` (runs in a worker thread)."""
    compressor = new_compressor(codec)
    out: list[bytes] = []
    offset, end = spool.fragment.begin, spool.fragment.end
    while offset < end:
        chunk = spool.read_at(offset, min(COMPRESS_CHUNK, end - offset))
        out.append(compressor.compress(chunk))
        offset += len(chunk)
    out.append(compressor.finish())
    return b"".join(out)
