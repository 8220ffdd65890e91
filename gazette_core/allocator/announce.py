"""Announcement of a member key under an Etcd lease that is kept alive.

The member key lives exactly as long as the lease: if the process dies or is
partitioned past the TTL, etcd deletes the key and every assignment written
under the same lease, and the allocator reassigns its items.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from types import TracebackType

import aetcd
import grpc
from aetcd import rpc

from gazette_core.errors import GazetteError, UnavailableError
from gazette_core.keyspace import etcd_util
from gazette_core.tasks import BackgroundTask

log = logging.getLogger(__name__)

RETRY_INTERVAL = 10.0
# Pause before retrying a failed keep-alive, doubling up to the maximum (or
# TTL/3 if shorter), so a lease is refreshed soon after etcd comes back.
RETRY_MIN_DELAY = 0.1
RETRY_MAX_DELAY = 0.5


class AnnouncementConflictError(GazetteError):
    """The member key changed behind the announcement's back."""


class Announcement:
    """Holds `key` = `value` under a lease of `ttl` seconds (whole seconds, at least one)."""

    def __init__(
        self,
        client: aetcd.Client,
        key: str,
        value: bytes,
        ttl: float,
        *,
        retry_interval: float = RETRY_INTERVAL,
        on_lost: Callable[[], None] | None = None,
    ) -> None:
        self.client = client
        self.key = key
        self.value = value
        # Etcd grants leases in whole seconds.
        self.ttl = max(1, int(ttl))
        self.retry_interval = retry_interval
        self.on_lost = on_lost
        self.mod_revision = 0
        self.lost = False
        # Event-loop time by which the lease has surely expired unless refreshed.
        self.expires = 0.0
        self._lease_id = 0
        self._keep_alive = BackgroundTask(f"keep-alive {key}")

    @property
    def lease_id(self) -> int:
        """The lease the key lives under (0 before `announce()` / after `revoke()`)."""
        return self._lease_id

    async def announce(self) -> None:
        """Grant a lease and put the key under it, waiting while another lease holds it."""
        asked = asyncio.get_running_loop().time()
        with etcd_util.reaching_etcd():
            await self.client.connect()
            grant = await self.client.leasestub.LeaseGrant(
                rpc.LeaseGrantRequest(TTL=self.ttl), metadata=self.client.metadata,
                timeout=etcd_util.CALL_TIMEOUT_S,
            )
        self._lease_id = grant.ID
        self.lost = False
        self.expires = asked + grant.TTL
        self._keep_alive.start(self._refresh_loop)
        try:
            while not await self._try_put():
                log.warning(
                    "member key %r is held by another lease; retrying in %ss",
                    self.key,
                    self.retry_interval,
                )
                await asyncio.sleep(self.retry_interval)
        except BaseException:
            # Don't leave a refreshed lease behind a failed or cancelled announcement.
            await self.revoke()
            raise

    @property
    def alive(self) -> bool:
        """Whether the lease may still be alive: not declared lost, TTL not run out."""
        return not self.lost and asyncio.get_running_loop().time() < self.expires

    async def _try_put(self) -> bool:
        resp = await etcd_util.txn(
            self.client,
            [etcd_util.cmp_version(self.key, 0)],
            [etcd_util.put_op(self.key, self.value, self._lease_id)],
            [etcd_util.get_op(self.key)],
        )
        if resp.succeeded:
            self.mod_revision = resp.header.revision
            return True
        kvs = resp.responses[0].response_range.kvs
        if kvs and kvs[0].lease == self._lease_id:
            self.value, self.mod_revision = kvs[0].value, kvs[0].mod_revision
            return True
        return False

    async def update(self, value: bytes) -> None:
        """Replace the value, keeping the lease, if the key is as last written."""
        resp = await etcd_util.txn(
            self.client,
            [etcd_util.cmp_mod_revision(self.key, self.mod_revision)],
            [etcd_util.put_op(self.key, value, self._lease_id)],
        )
        if not resp.succeeded:
            raise AnnouncementConflictError(
                f"member key {self.key!r} changed since revision {self.mod_revision}"
            )
        self.value, self.mod_revision = value, resp.header.revision

    async def revoke(self) -> None:
        """Stop refreshing and revoke the lease, deleting every key under it."""
        await self._stop_refresh()
        lease, self._lease_id = self._lease_id, 0
        if lease:
            try:
                with etcd_util.reaching_etcd():
                    await self.client.leasestub.LeaseRevoke(
                        rpc.LeaseRevokeRequest(ID=lease), metadata=self.client.metadata,
                        timeout=etcd_util.CALL_TIMEOUT_S,
                    )
            except etcd_util.EtcdUnavailableError as exc:
                # Nothing else to do: the lease ends by itself once its TTL runs out.
                log.warning("could not revoke the lease of %r: %s", self.key, exc)
            except rpc.AioRpcError as exc:
                if exc.code() != grpc.StatusCode.NOT_FOUND:
                    raise
                log.info("lease of %r had already expired", self.key)

    async def _stop_refresh(self) -> None:
        await self._keep_alive.stop()

    async def __aenter__(self) -> Announcement:
        await self.announce()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.revoke()

    async def _refresh_loop(self) -> None:
        """Refresh every TTL/3, retrying failures with back-off; declare the lease
        lost when etcd says it is gone or the TTL has surely run out by our clock."""
        loop = asyncio.get_running_loop()
        period = self.ttl / 3
        delay = RETRY_MIN_DELAY
        while True:
            sent = loop.time()
            try:
                # A round trip outlasting the lease must not delay declaring it lost.
                remaining = await self._refresh(min(period, max(0.1, self.expires - sent)))
            except (rpc.AioRpcError, aetcd.ClientError, GazetteError, TimeoutError) as exc:
                log.warning("refreshing lease of %r failed (%.1fs of its TTL left): %s",
                            self.key, max(0.0, self.expires - loop.time()), exc)
                if loop.time() >= self.expires:
                    self._declare_lost("its TTL ran out while etcd was unreachable")
                    return
                # Never sleep past the expiry: one more try must come before it.
                await asyncio.sleep(min(delay, max(0.0, self.expires - loop.time())))
                delay = min(delay * 2, period, RETRY_MAX_DELAY)
                continue
            if remaining <= 0:
                self._declare_lost("etcd no longer knows it")
                return
            # Etcd counted `remaining` from some instant after `sent`: ours is the
            # earlier, safe bound of when the lease expires.
            self.expires = sent + remaining
            delay = RETRY_MIN_DELAY
            await asyncio.sleep(period)

    async def _refresh(self, timeout: float) -> int:
        """One keep-alive round trip; returns the lease's remaining TTL (<= 0 if gone)."""
        with etcd_util.reaching_etcd():
            call = self.client.leasestub.LeaseKeepAlive(metadata=self.client.metadata)
            try:
                async with asyncio.timeout(timeout):
                    await call.write(rpc.LeaseKeepAliveRequest(ID=self._lease_id))
                    resp = await call.read()
            finally:
                call.cancel()
        if resp is grpc.aio.EOF:
            raise UnavailableError("etcd lease keep-alive stream ended")
        return int(resp.TTL)

    def _declare_lost(self, why: str) -> None:
        log.error("lease of member key %r was lost: %s", self.key, why)
        self.lost = True
        if self.on_lost is not None:
            self.on_lost()
