"""Small-append latency through real brokers, as ratios to the bare gRPC floor of the same run.

`python -m bench.append_latency_bench` starts a ceiling server (bench.ceiling),
a one-broker stack and a three-broker stack (replication 3) of its own, and
times sequential 1 KiB appends in blocks that alternate with blocks of the
floor's Append-shaped round trips, so a machine whose load drifts during the
run moves both alike. It prints one JSON object of figures.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import grpc

from bench import ceiling
from gazette_core.broker.client.appender import append, append_retrying
from gazette_core.broker.client.journals import apply_journals
from gazette_core.broker.client.routing import JournalClient, Router
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.local import stack as local_stack
from gazette_core.testing.broker import journal_spec, journal_stub
from gazette_core.testing.etcd import free_port

MiB = 1 << 20
RECORD = bytes(1024)
Timed = Callable[[], Awaitable[object]]


async def _timed(samples: list[float], op: Timed, count: int) -> None:
    for _ in range(count):
        start = time.perf_counter()
        await op()
        samples.append((time.perf_counter() - start) * 1e3)


def _quantiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return ordered[len(ordered) // 2], ordered[int(len(ordered) * 0.99)]


async def alternate(floor: Timed, broker: Timed, count: int, block: int = 250
                    ) -> dict[str, float]:
    """p50/p99 ms of `count` floor round trips and `count` appends, in alternating blocks."""
    for op in (floor, broker):  # warm both paths up first
        await _timed([], op, 50)
    floor_ms: list[float] = []
    broker_ms: list[float] = []
    for _ in range(max(1, count // block)):
        await _timed(floor_ms, floor, block)
        await _timed(broker_ms, broker, block)
    (f50, f99), (b50, b99) = _quantiles(floor_ms), _quantiles(broker_ms)
    return {"floor_p50_ms": f50, "floor_p99_ms": f99, "p50_ms": b50, "p99_ms": b99,
            "p50_vs_floor": b50 / f50, "p99_vs_floor": b99 / f99}


async def _floor_op(channel: grpc.aio.Channel) -> Timed:
    call = channel.stream_unary(ceiling.UPLOAD, pb.AppendRequest.SerializeToString,
                                pb.AppendResponse.FromString)
    await channel.channel_ready()
    msgs = [pb.AppendRequest(journal="bench/latency"), pb.AppendRequest(content=RECORD),
            pb.AppendRequest()]
    return lambda: call(iter(msgs))


async def _measure(endpoint: str, ceiling_port: int, replication: int, count: int
                   ) -> dict[str, float]:
    journal = f"bench/latency-r{replication}"
    async with journal_stub(endpoint) as stub, grpc.aio.insecure_channel(
            f"127.0.0.1:{ceiling_port}", options=ceiling.OPTIONS) as floor_channel:
        spec = journal_spec(journal, length=512 * MiB, refresh_s=60, replication=replication)
        await apply_journals(stub, pb.ApplyRequest(changes=[
            pb.ApplyRequest.Change(upsert=spec, expect_mod_revision=-1)]))
        # As bench/__main__ measures: one broker's own stub, three brokers through a Router.
        client: JournalClient = stub if replication == 1 else Router(stub)
        await append_retrying(client, journal, b"warm-up\n")  # waits for every member
        return await alternate(await _floor_op(floor_channel),
                               lambda: append(client, journal, RECORD), count)


def _stack(tmp: Path, name: str, brokers: int, zones: int) -> local_stack.Stack:
    return local_stack.up(tmp / name, brokers=brokers, zones=zones, activate=False)


def run(tmp: Path, count: int = 2000) -> dict[str, float]:
    """Figures of one broker (`append_1k_*`) and of three with replication 3 (`append_r3_1k_*`)."""
    ceiling_port = free_port()
    server = ceiling.start_server(ceiling_port)
    out: dict[str, float] = {}
    try:
        for prefix, brokers, zones, replication in (("append_1k", 1, 1, 1),
                                                    ("append_r3_1k", 3, 2, 3)):
            stack = _stack(tmp, prefix, brokers, zones)
            try:
                figures = asyncio.run(_measure(stack.brokers[0].endpoint, ceiling_port,
                                               replication, count))
            finally:
                local_stack.down(stack.directory)
            out.update({f"{prefix}_{k}": round(v, 3) for k, v in figures.items()})
    finally:
        server.terminate()
        server.wait()
    return out


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    with tempfile.TemporaryDirectory(prefix="gazette-append-latency-") as tmp:
        print(json.dumps(run(Path(tmp), count), sort_keys=True))


if __name__ == "__main__":
    main()
