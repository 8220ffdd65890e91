"""A full spool disk: clear refusals, rolled spools, and files closed once persisted.

Spool directories here are real 2 MiB tmpfs mounts, filled with a real file.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack
from pathlib import Path

import aetcd
import grpc
import pytest
import pytest_asyncio

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.service import Broker
from gazette_core.testing.broker import broker_config, journal_spec, journal_stub, running_broker
from gazette_core.testing.etcd import EtcdServer
from tests.broker.cluster import Cluster, settled_route
from tests.broker.support import append, content, create

JOURNAL = "disk/journal"
TMPFS_SIZE = "2m"


def mount_tmpfs(directory: Path) -> None:
    directory.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs",
                    str(directory)], check=True)


@pytest.fixture
def spool_dirs(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """Mounts small tmpfs spool directories on demand; unmounts them all afterwards."""
    mounted: list[Path] = []

    def mount(name: str) -> Path:
        directory = tmp_path / name
        mount_tmpfs(directory)
        mounted.append(directory)
        return directory

    yield mount
    for directory in mounted:  # lazily: a leftover descriptor must not fail the teardown
        subprocess.run(["umount", "-l", str(directory)], check=True)


def fill(directory: Path) -> Path:
    """Fill the file system of `directory` up to its last byte with a filler file."""
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as out:
        for size in (1 << 16, 1 << 12, 1):
            with contextlib.suppress(OSError):
                while True:
                    out.write(b"\0" * size)
    return filler


def open_files_in(directory: Path) -> list[str]:
    """What this process's descriptors open under `directory` (spools show as deleted)."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith(f"{directory}/"):
                found.append(target)
    return found


async def until(condition: Callable[[], bool], what: str, seconds: float = 10) -> None:
    for _ in range(int(seconds / 0.05)):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"never saw {what}")


def persisted(root: Path) -> list[str]:
    """Names of the fragment files of JOURNAL under the store's file root."""
    directory = root / JOURNAL
    return sorted(os.listdir(directory)) if directory.exists() else []


def spec(replication: int = 1) -> pb.JournalSpec:
    return journal_spec(JOURNAL, length=64 << 20, replication=replication)


async def start_journal(stub: pb_grpc.JournalStub) -> bytes:
    """Append past the first-fragment roll of a new journal; the content so far."""
    first = await append(stub, JOURNAL, b"p")
    second = await append(stub, JOURNAL, b"a" * (256 << 10))  # rolls the first fragment
    assert second.commit.begin == first.commit.end == 1
    return b"p" + b"a" * (256 << 10)


async def test_spool_files_close_once_persisted(etcd: aetcd.Client, etcd_server: EtcdServer,
                                                tmp_path: Path) -> None:
    spools, root = tmp_path / "spool", tmp_path / "root"
    spools.mkdir()
    root.mkdir()
    config = broker_config(etcd_server.endpoint, str(root), spool_dir=str(spools))
    async with running_broker(config) as broker, journal_stub(broker.endpoint) as stub:
        await create(stub, spec())
        await start_journal(stub)
        await until(lambda: len(persisted(root)) == 1, "the first fragment persisted")
        # Only the live spool stays open: the persisted one's space is free again.
        await until(lambda: len(open_files_in(spools)) == 1, "one open spool file")


async def test_full_spool_disk_refuses_the_append_and_rolls_the_spool(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path,
        spool_dirs: Callable[[str], Path]) -> None:
    spools, root = spool_dirs("spool"), tmp_path / "root"
    root.mkdir()
    config = broker_config(etcd_server.endpoint, str(root), spool_dir=str(spools))
    async with running_broker(config) as broker, journal_stub(broker.endpoint) as stub:
        await create(stub, spec())
        before = await start_journal(stub)
        await until(lambda: len(open_files_in(spools)) == 1, "the first fragment's file closed")
        fill(spools)

        with pytest.raises(grpc.aio.AioRpcError) as err:
            await append(stub, JOURNAL, b"b" * (128 << 10))
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert err.value.details() == (
            f"spool directory {spools} is full: no space left on device")

        # The full spool was rolled: once persisted, its file closes and frees the
        # space the next append needs, though the filler is still there.
        await until(lambda: len(persisted(root)) == 2, "the full spool persisted")
        await until(lambda: len(open_files_in(spools)) == 1, "the full spool's file closed")
        after = await append(stub, JOURNAL, b"c" * (64 << 10))
        assert (after.commit.begin, after.commit.end) == (len(before), len(before) + (64 << 10))
        assert await content(stub, JOURNAL) == before + b"c" * (64 << 10)


@pytest_asyncio.fixture(loop_scope="session")
async def pair(etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path,
               spool_dirs: Callable[[str], Path]) -> AsyncIterator[tuple[Cluster, list[Path]]]:
    """Two brokers, each spooling to its own small tmpfs."""
    (tmp_path / "root").mkdir()
    async with AsyncExitStack() as stack:
        brokers: list[Broker] = []
        stubs, dirs = [], []
        for i in range(2):
            spools = spool_dirs(f"spool-{i}")
            config = broker_config(etcd_server.endpoint, str(tmp_path / "root"),
                                   id=f"disk-{i}", spool_dir=str(spools))
            broker = await stack.enter_async_context(running_broker(config))
            brokers.append(broker)
            stubs.append(await stack.enter_async_context(journal_stub(broker.endpoint)))
            dirs.append(spools)
        yield Cluster(stack, brokers, stubs), dirs


async def replicated_journal(cluster: Cluster) -> pb.Route:
    """Create the journal on both brokers; its route once both have it."""
    await create(cluster.stubs[0], spec(replication=2))
    return await settled_route(cluster, JOURNAL, 2)


def replica_dir(cluster: Cluster, dirs: list[Path], route: pb.Route) -> Path:
    """The spool directory of the route's member that is not its primary."""
    ids = [b.process_id for b in cluster.brokers]
    return dirs[1 - ids.index(route.members[route.primary])]


async def test_replica_closes_spool_files_the_primary_persisted(
        pair: tuple[Cluster, list[Path]], tmp_path: Path) -> None:
    cluster, dirs = pair
    route = await replicated_journal(cluster)
    await start_journal(cluster.stub_of(route.members[route.primary]))
    await until(lambda: len(persisted(tmp_path / "root")) == 1, "the first fragment persisted")
    # The replica held it back as a safety net; once listed, its file closes.
    await until(lambda: len(open_files_in(replica_dir(cluster, dirs, route))) == 1,
                "one open spool file at the replica")


async def append_failing_mid_stream(cluster: Cluster, route: pb.Route) -> grpc.aio.AioRpcError:
    """An append of many chunks: the replica's disk fills with the first; the primary goes
    on streaming (the replica discards the rest) and learns why at the commit."""
    call = cluster.stub_of(route.members[route.primary]).Append()
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call.write(pb.AppendRequest(journal=JOURNAL))
        for _ in range(8):
            await call.write(pb.AppendRequest(content=b"b" * (128 << 10)))
            await asyncio.sleep(0.01)  # let the replica meet the full disk mid-stream
        await call.write(pb.AppendRequest())
        await call.done_writing()
        await call
    return err.value


async def append_failing_at_commit(cluster: Cluster, route: pb.Route) -> grpc.aio.AioRpcError:
    """An append of one chunk: its primary learns of the failure at the commit."""
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await append(cluster.stub_of(route.members[route.primary]), JOURNAL, b"b" * (128 << 10))
    return err.value


@pytest.mark.parametrize("failing_append", [append_failing_mid_stream, append_failing_at_commit])
async def test_full_spool_disk_of_a_replica_refuses_the_append(
        pair: tuple[Cluster, list[Path]], tmp_path: Path,
        failing_append: Callable[[Cluster, pb.Route], Awaitable[grpc.aio.AioRpcError]]) -> None:
    cluster, dirs = pair
    route = await replicated_journal(cluster)
    primary = cluster.stub_of(route.members[route.primary])
    before = await start_journal(primary)
    full = replica_dir(cluster, dirs, route)
    filler = fill(full)

    err = await failing_append(cluster, route)
    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    peer = route.members[1 - route.primary]
    assert err.details() == (
        f"replica {peer.zone}#{peer.suffix}: spool directory {full} is full: "
        "no space left on device")

    filler.unlink()
    after = await append(primary, JOURNAL, b"c" * (64 << 10))
    readable = await content(primary, JOURNAL)
    # No acknowledged byte lost, and the new append starts at the write head
    # (the failed one may have been committed by the primary alone).
    assert readable[:len(before)] == before
    assert (after.commit.begin, after.commit.end) == (
        len(readable) - (64 << 10), len(readable))
    assert readable[after.commit.begin:] == b"c" * (64 << 10)
    # The full spool was rolled before the new append, so its content persists.
    await until(lambda: len(persisted(tmp_path / "root")) == 2, "the full spool persisted")
