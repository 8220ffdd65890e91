"""Measurements of a real broker: append and read throughput, append latency, record rate."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Sequence

from gazette_core.broker.client.append_service import AppendService
from gazette_core.broker.client.appender import append
from gazette_core.broker.client.routing import JournalClient
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc

APPEND_CHUNK = 64 * 1024


async def append_throughput(stub: JournalClient, journal: str, per_append: int,
                            appends: int, runs: int) -> float:
    """Median MB/s of back-to-back atomic appends of `per_append` bytes in 64 KiB chunks."""
    chunk = bytes(APPEND_CHUNK)
    rates = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(appends):
            await append(stub, journal, [chunk] * (per_append // APPEND_CHUNK))
        rates.append(per_append * appends / (time.perf_counter() - start) / 1e6)
    return statistics.median(rates)


async def read_throughput(stub: pb_grpc.JournalStub, journal: str, runs: int) -> float:
    """Median MB/s of reading the journal from offset 0 to its write head."""
    rates = []
    for _ in range(runs):
        start = time.perf_counter()
        n = 0
        async for resp in stub.Read(pb.ReadRequest(journal=journal, offset=0)):
            n += len(resp.content)
        rates.append(n / (time.perf_counter() - start) / 1e6)
    return statistics.median(rates)


async def append_latency(stub: JournalClient, journal: str, count: int
                         ) -> tuple[float, float]:
    """(p50, p99) milliseconds of sequential 1 KiB appends."""
    record = bytes(1024)
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        await append(stub, journal, record)
        samples.append((time.perf_counter() - start) * 1e3)
    samples.sort()
    return samples[len(samples) // 2], samples[int(len(samples) * 0.99)]


async def record_rate(stub: pb_grpc.JournalStub, journal: str, count: int,
                      records: Sequence[bytes] = (bytes(1023) + b"\n",)) -> float:
    """Records per second enqueued through the AppendService: 1 KiB ones, or `records` in turn."""
    service = AppendService(stub)  # type: ignore[arg-type]
    service.start()
    start = time.perf_counter()
    batches = {}
    for i in range(count):
        handle = service.enqueue(journal, records[i % len(records)])
        batches[id(handle)] = handle
        if i % 4096 == 4095:
            await asyncio.sleep(0)  # let batches go out, as a real producer loop would
    # Batches of one journal commit in order: the last one committed means all did.
    last = await handle
    elapsed = time.perf_counter() - start
    await service.stop()
    assert all(h.future.exception() is None for h in batches.values())
    assert last.end - last.begin <= 2 * 1024 * 1024
    return count / elapsed
