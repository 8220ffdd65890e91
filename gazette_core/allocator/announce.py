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


class AnnouncementConflictError(GazetteError):
    """The member key changed behind the announcement's back."""


class Announcement:
    """Holds `key` = `value` under a lease of `ttl` seconds."""

    def __init__(
        self,
        client: aetcd.Client,
        key: str,
        value: bytes,
        ttl: int,
        *,
        retry_interval: float = RETRY_INTERVAL,
        on_lost: Callable[[], None] | None = None,
    ) -> None:
        self.client = client
        self.key = key
        self.value = value
        self.ttl = ttl
        self.retry_interval = retry_interval
        self.on_lost = on_lost
        self.mod_revision = 0
        self.lost = False
        self._lease_id = 0
        self._keep_alive = BackgroundTask(f"keep-alive {key}")

    @property
    def lease_id(self) -> int:
        """The lease the key lives under (0 before `announce()` / after `revoke()`)."""
        return self._lease_id

    async def announce(self) -> None:
        """Grant a lease and put the key under it, waiting while another lease holds it."""
        await self.client.connect()
        grant = await self.client.leasestub.LeaseGrant(
            rpc.LeaseGrantRequest(TTL=self.ttl), metadata=self.client.metadata
        )
        self._lease_id = grant.ID
        self.lost = False
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
                await self.client.leasestub.LeaseRevoke(
                    rpc.LeaseRevokeRequest(ID=lease), metadata=self.client.metadata
                )
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
        """Refresh every TTL/3; declare the lease lost if etcd drops it or the TTL runs out."""
        loop = asyncio.get_running_loop()
        period = self.ttl / 3
        expires = loop.time() + self.ttl
        while True:
            try:
                remaining = await self._refresh(period)
            except (rpc.AioRpcError, UnavailableError, TimeoutError) as exc:
                log.warning("refreshing lease of %r failed: %s", self.key, exc)
                if loop.time() >= expires:
                    self._declare_lost()
                    return
                await asyncio.sleep(min(1.0, period))
                continue
            if remaining <= 0:
                self._declare_lost()
                return
            expires = loop.time() + remaining
            await asyncio.sleep(period)

    async def _refresh(self, timeout: float) -> int:
        """One keep-alive round trip; returns the lease's remaining TTL (<= 0 if gone)."""
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

    def _declare_lost(self) -> None:
        log.error("lease of member key %r was lost", self.key)
        self.lost = True
        if self.on_lost is not None:
            self.on_lost()
