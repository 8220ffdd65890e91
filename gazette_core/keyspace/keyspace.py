"""KeySpace: a decoded, ordered mirror of every key under an Etcd prefix.

It loads the prefix with one Range, then follows a Watch from the next
revision, applying events in order. Readers see a consistent snapshot between
awaits (updates are applied synchronously on the event loop) and can wait for
a revision, e.g. one returned by their own transaction.

With a `watch_delay`, watch responses are held that long after the first of
them arrives and then applied together, with one notification of observers:
a burst of changes (an allocator's many assignments, say) costs observers
one pass instead of one each.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType

import aetcd
from aetcd import rpc

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import GazetteError, UnavailableError
from gazette_core.keyspace import etcd_util
from gazette_core.keyspace.watch import WatchStream
from gazette_core.server.tls import ClientTLS
from gazette_core.tasks import BackgroundTask

log = logging.getLogger(__name__)

Decoder = Callable[[str, bytes], object]

# Pause before re-loading after a failed watch, so a down etcd isn't hammered,
# doubling while etcd stays unreachable up to the maximum.
RETRY_DELAY = 0.25
MAX_RETRY_DELAY = 2.0
# How long a waiter behind the wanted revision relies on the watch before
# re-reading the prefix (etcd catches up new watchers every 100 ms), doubling
# up to the maximum while it keeps waiting.
SYNC_GRACE = 0.15
MAX_SYNC_GRACE = 2.0


@dataclass(frozen=True)
class KeyValue:
    """One key of the mirror with its decoded value and etcd metadata."""

    key: str
    raw: bytes
    decoded: object
    create_revision: int
    mod_revision: int
    version: int
    lease: int


class KeySpace:
    """Mirror of the keys under `root`, decoded by `decode(key, value)`."""

    def __init__(self, client: aetcd.Client, root: str, decode: Decoder,
                 watch_delay: float = 0.0) -> None:
        self.client = client
        self.root = root
        self._decode = decode
        self.watch_delay = watch_delay
        self._keys: list[str] = []
        self._kvs: dict[str, KeyValue] = {}
        self.header = pb.Header.Etcd()
        self.observers: list[Callable[[], None]] = []
        self._changed = asyncio.Event()
        self._floor = 0
        self._sync_lock = asyncio.Lock()
        self._follower = BackgroundTask(f"keyspace {root}")

    @property
    def revision(self) -> int:
        """The latest etcd revision this mirror is known to reflect."""
        return int(self.header.revision)

    def get(self, key: str) -> KeyValue | None:
        """The entry at exactly `key`, if present and decodable."""
        return self._kvs.get(key)

    def prefixed(self, prefix: str) -> list[KeyValue]:
        """Entries whose key starts with `prefix`, in key order."""
        out: list[KeyValue] = []
        for i in range(bisect.bisect_left(self._keys, prefix), len(self._keys)):
            key = self._keys[i]
            if not key.startswith(prefix):
                break
            out.append(self._kvs[key])
        return out

    async def load(self) -> None:
        """Replace the mirror with a fresh Range of the prefix."""
        self._replace(await etcd_util.get_prefix(self.client, self.root))

    def _replace(self, resp: rpc.RangeResponse) -> None:
        kvs: dict[str, KeyValue] = {}
        for kv in resp.kvs:
            entry = self._entry(kv)
            if entry is not None:
                kvs[entry.key] = entry
        self._kvs = kvs
        self._keys = sorted(kvs)
        self.header = etcd_util.header_of(resp.header)
        # Watch events at or below this revision are already reflected.
        self._floor = resp.header.revision
        self._notify()

    def start(self) -> None:
        """Follow changes in a background task (call after `load()`)."""
        self._follower.start(self._run)

    async def stop(self) -> None:
        """Stop following changes; the mirror keeps its last state."""
        await self._follower.stop()

    async def __aenter__(self) -> KeySpace:
        await self.load()
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def wait_for_revision(self, rev: int, timeout: float | None = None) -> None:
        """Return once `revision >= rev`; raises TimeoutError after `timeout` seconds."""
        grace = SYNC_GRACE
        async with asyncio.timeout(timeout):
            while self.revision < rev:
                try:
                    async with asyncio.timeout(grace):
                        await self._changed.wait()
                except TimeoutError:
                    await self._sync(rev)
                    grace = min(grace * 2, MAX_SYNC_GRACE)

    async def _sync(self, rev: int) -> None:
        """Re-read the prefix if the watch hasn't reached `rev` on its own.

        Writes outside the prefix produce no events, so a revision reached only
        by them is otherwise not observed until the next change under it (etcd
        3.4's on-demand progress responses can't be used instead: they may run
        ahead of events still being delivered).
        """
        async with self._sync_lock:
            if self.revision >= rev:
                return
            try:
                resp = await etcd_util.get_prefix(self.client, self.root)
            except (GazetteError, rpc.AioRpcError, aetcd.ClientError) as exc:
                log.warning("keyspace re-read of %r failed: %s", self.root, exc)
                return
            # Events applied while the Range was in flight may already be newer.
            if resp.header.revision > self.revision:
                self._replace(resp)

    async def wait_for_change(self, after_revision: int) -> None:
        """Return once `revision > after_revision`."""
        while self.revision <= after_revision:
            await self._changed.wait()

    def _entry(self, kv: rpc.KeyValue) -> KeyValue | None:
        key = _key_str(kv.key)
        try:
            decoded = self._decode(key, kv.value)
        except (ValueError, GazetteError) as exc:
            log.warning("ignoring etcd key %r: %s", key, exc)
            return None
        return KeyValue(
            key=key,
            raw=kv.value,
            decoded=decoded,
            create_revision=kv.create_revision,
            mod_revision=kv.mod_revision,
            version=kv.version,
            lease=kv.lease,
        )

    def _apply(self, resp: rpc.WatchResponse) -> bool:
        """Apply one watch response's events, then advance the header; whether anything changed.

        Its caller notifies observers of changes.
        """
        if resp.created:
            # Its header revision may run ahead of catch-up events not yet sent.
            self._set_header(resp.header, 0)
            return False
        for event in resp.events:
            if event.kv.mod_revision <= self._floor:
                continue
            key = _key_str(event.kv.key)
            entry = self._entry(event.kv) if event.type == rpc.Event.PUT else None
            if entry is None:
                # Deleted, or now undecodable: either way it no longer exists for readers.
                if self._kvs.pop(key, None) is not None:
                    del self._keys[bisect.bisect_left(self._keys, key)]
            else:
                if key not in self._kvs:
                    bisect.insort(self._keys, key)
                self._kvs[key] = entry
        # A response of a watch still catching up carries the store's current
        # revision in its header while later events are yet to come: only its
        # last event's revision is known to be fully applied.
        reached = resp.events[-1].kv.mod_revision if resp.events else resp.header.revision
        before = self.revision
        self._set_header(resp.header, reached)
        return bool(resp.events) or self.revision != before

    def _set_header(self, hdr: rpc.ResponseHeader, revision: int) -> None:
        self.header = pb.Header.Etcd(
            cluster_id=hdr.cluster_id,
            member_id=hdr.member_id,
            raft_term=hdr.raft_term,
            revision=max(self.revision, revision),
        )

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()
        for observer in list(self.observers):
            try:
                observer()
            except Exception:
                log.exception("keyspace observer failed")

    async def _run(self) -> None:
        delay = RETRY_DELAY
        while True:
            followed_from = self.revision
            try:
                await self._follow()
            except (GazetteError, rpc.AioRpcError, aetcd.ClientError) as exc:
                log.warning("keyspace watch of %r ended: %s; re-loading", self.root, exc)
            except Exception:
                # Keep mirroring whatever went wrong; a dead watch would freeze every reader.
                log.exception("keyspace watch of %r failed; re-loading", self.root)
            if self.revision > followed_from:
                delay = RETRY_DELAY  # the watch made progress: etcd was reachable
            await asyncio.sleep(delay)
            try:
                await self.load()
            except (GazetteError, rpc.AioRpcError, aetcd.ClientError) as exc:
                log.warning("keyspace re-load of %r failed: %s", self.root, exc)
                delay = min(delay * 2, MAX_RETRY_DELAY)
            else:
                delay = RETRY_DELAY

    async def _follow(self) -> None:
        """Watch from the next revision until the stream fails or is compacted."""
        async with WatchStream(self.client, self.root, self.revision + 1) as watch:
            if self.watch_delay <= 0:
                async for resp in watch:
                    if self._apply(resp):
                        self._notify()
                return
            await self._follow_delayed(watch)

    async def _follow_delayed(self, watch: WatchStream) -> None:
        """Apply responses in batches: each waits `watch_delay` for the ones behind it.

        A separate task reads the stream, so that no read is ever cut short
        (which would end the RPC); a failure of the stream is raised once the
        responses before it are applied.
        """
        queue: asyncio.Queue[rpc.WatchResponse | Exception] = asyncio.Queue()

        async def pump() -> None:
            try:
                async for resp in watch:
                    queue.put_nowait(resp)
            except Exception as exc:
                queue.put_nowait(exc)

        reader = asyncio.create_task(pump(), name=f"keyspace watch {self.root}")
        try:
            while True:
                batch = [await queue.get()]
                await asyncio.sleep(self.watch_delay)
                while not queue.empty():
                    batch.append(queue.get_nowait())
                self._apply_batch(batch)
        finally:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)

    def _apply_batch(self, batch: list[rpc.WatchResponse | Exception]) -> None:
        """Apply the responses in order with one notification; raise a failure among them."""
        changed = False
        try:
            for item in batch:
                if isinstance(item, Exception):
                    raise item
                changed = self._apply(item) or changed
        finally:
            if changed:
                self._notify()


def _key_str(key: bytes) -> str:
    # Foreign keys needn't be UTF-8; keep them distinct and round-trippable.
    return key.decode(errors="surrogateescape")


async def connect_loaded(address: str, root: str, decode: Decoder, timeout: float = 10.0,
                         tls: ClientTLS | None = None, watch_delay: float = 0.0
                         ) -> tuple[aetcd.Client, KeySpace]:
    """A client of the etcd at `address` and a KeySpace of `root` loaded from it.

    Fails within `timeout` with an UnavailableError naming the address, so a
    process pointed at the wrong etcd says so instead of hanging. `tls` holds
    the files for an https address; the KeySpace applies changes after
    `watch_delay`.
    """
    client = await etcd_util.connect(address, tls)
    keyspace = KeySpace(client, root, decode, watch_delay)
    try:
        async with asyncio.timeout(timeout):
            await keyspace.load()
    except (TimeoutError, rpc.AioRpcError, aetcd.ClientError,
            etcd_util.EtcdUnavailableError) as exc:
        await client.close()
        detail = (exc.details() if isinstance(exc, rpc.AioRpcError) else
                  exc.detail if isinstance(exc, etcd_util.EtcdUnavailableError) else
                  str(exc) or "timeout")
        raise UnavailableError(f"cannot reach etcd at {address}: {detail}") from None
    return client, keyspace

