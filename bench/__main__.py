"""`make bench`: ceilings and broker figures from one run, printed as one JSON object."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from bench import (
    allocator_bench,
    broker_bench,
    ceiling,
    consume_bench,
    decode_bench,
    journals_frame_bench,
    publish_bench,
    recoverylog_bench,
    redis_baseline,
    shards_prune_bench,
    spark_ceilings,
    spark_source_bench,
)
from gazette_core.broker.client.appender import append_retrying
from gazette_core.broker.client.journals import apply_journals
from gazette_core.broker.client.routing import Router
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.local import stack as local_stack
from gazette_core.testing.broker import journal_spec, journal_stub
from gazette_core.testing.etcd import free_port

RUNS = int(os.environ.get("BENCH_RUNS", "3"))
MiB = 1 << 20


async def measure(broker: str, ceiling_port: int) -> dict[str, float]:
    out: dict[str, float] = {}
    out["append_ceiling_mb_s"] = await ceiling.measure_upload(ceiling_port, 64 * 1024,
                                                              256 * MiB, RUNS)
    out["read_ceiling_mb_s"] = await ceiling.measure_download(ceiling_port, 32736,
                                                              256 * MiB, RUNS)
    floor_p50, floor_p99 = await ceiling.measure_mini_append(ceiling_port, 2000)
    out["append_1k_floor_p50_ms"], out["append_1k_floor_p99_ms"] = floor_p50, floor_p99
    async with journal_stub(broker) as stub:
        specs = [journal_spec(n, length=512 * MiB, refresh_s=60) for n in
                 ("bench/throughput", "bench/latency", "bench/records")]
        await apply_journals(stub, pb.ApplyRequest(changes=[
            pb.ApplyRequest.Change(upsert=s, expect_mod_revision=-1) for s in specs]))
        for name in ("bench/throughput", "bench/latency", "bench/records"):
            await append_retrying(stub, name, b"warm-up\n")  # waits for assignment
        out["append_mb_s"] = await broker_bench.append_throughput(
            stub, "bench/throughput", 16 * MiB, 4, RUNS)
        out["read_mb_s"] = await broker_bench.read_throughput(stub, "bench/throughput", RUNS)
        p50, p99 = await broker_bench.append_latency(stub, "bench/latency", 2000)
        out["append_1k_p50_ms"], out["append_1k_p99_ms"] = p50, p99
        out["records_per_s"] = await broker_bench.record_rate(stub, "bench/records", 200_000)
    out["append_ratio"] = out["append_mb_s"] / out["append_ceiling_mb_s"]
    out["read_ratio"] = out["read_mb_s"] / out["read_ceiling_mb_s"]
    # How many times the bare round trip a broker append takes (1.0 is the floor).
    out["append_1k_p50_vs_floor"] = out["append_1k_p50_ms"] / floor_p50
    out["append_1k_p99_vs_floor_p99"] = out["append_1k_p99_ms"] / floor_p99
    return {k: round(v, 3) for k, v in out.items()}


async def measure_r3(broker: str, ceiling_mb_s: float, floor_p50_ms: float) -> dict[str, float]:
    """Replication 3 on three local brokers: throughput (64 KiB chunks) and 1 KiB latency."""
    out: dict[str, float] = {}
    async with journal_stub(broker) as stub:
        specs = [journal_spec(n, length=512 * MiB, refresh_s=60, replication=3)
                 for n in ("bench/r3-throughput", "bench/r3-latency")]
        await apply_journals(stub, pb.ApplyRequest(changes=[
            pb.ApplyRequest.Change(upsert=s, expect_mod_revision=-1) for s in specs]))
        # Routed as a Go client would: straight to each journal's primary.
        router = Router(stub)
        for spec in specs:
            await append_retrying(router, spec.name, b"warm-up\n")  # waits for three members
        out["append_r3_mb_s"] = await broker_bench.append_throughput(
            router, "bench/r3-throughput", 16 * MiB, 2, RUNS)
        p50, p99 = await broker_bench.append_latency(router, "bench/r3-latency", 1000)
        out["append_r3_1k_p50_ms"], out["append_r3_1k_p99_ms"] = p50, p99
    out["append_r3_ratio"] = out["append_r3_mb_s"] / ceiling_mb_s
    # The target (2.5 ms) assumes a 0.72 ms floor: about 3.5 times the floor.
    out["append_r3_1k_p50_vs_floor"] = out["append_r3_1k_p50_ms"] / floor_p50_ms
    return {k: round(v, 3) for k, v in out.items()}


def on_stack(tmp: str, name: str, brokers: int, zones: int) -> local_stack.Stack:
    stack = local_stack.up(Path(tmp) / name, brokers=brokers, zones=zones, activate=False)
    time.sleep(0.5)
    return stack


def _redis(records_per_s: float) -> dict[str, float]:
    """Redis Streams' pipelined XADD rate beside ours, or nothing if Redis is not installed."""
    try:
        return redis_baseline.measure(records_per_s)
    except RuntimeError as err:
        print(f"no Redis baseline: {err}", file=sys.stderr)
        return {}


def main() -> None:
    # The one JVM that every Spark part shares starts with the repository on its workers'
    # path: spark_ceilings' data sources are imported by name there.
    spark_ceilings.with_repo_on_path()
    ceiling_port = free_port()
    server = ceiling.start_server(ceiling_port)
    with tempfile.TemporaryDirectory(prefix="gazette-bench-") as tmp:
        try:
            single = on_stack(tmp, "single", 1, 1)
            result = asyncio.run(measure(single.brokers[0].endpoint, ceiling_port))
            result.update(asyncio.run(recoverylog_bench.measure(single.brokers[0].endpoint,
                                                                RUNS)))
            local_stack.down(single.directory)
            result.update(_redis(result["records_per_s"]))
            three = on_stack(tmp, "three", 3, 2)
            result.update(asyncio.run(measure_r3(three.brokers[0].endpoint,
                                                 result["append_ceiling_mb_s"],
                                                 result["append_1k_floor_p50_ms"])))
            local_stack.down(three.directory)
            # Consumers on stacks of their own (consume_bench says which).
            result.update(consume_bench.run(Path(tmp), result["append_1k_floor_p50_ms"],
                                            result["append_1k_floor_p99_ms"]))
            result.update(decode_bench.run(consume_bench.MESSAGES,
                                           result["consume_ceiling_msgs_per_s"]))
            # Publishers against raw AppendService records (own stack).
            result.update(publish_bench.run(Path(tmp)))
            # Journals read into DataFrames on Spark, on a stack of its own.
            result.update(journals_frame_bench.run(Path(tmp)))
            # Recovery-log pruning on Spark against its serial delete loop (own stack).
            result.update(shards_prune_bench.run(Path(tmp)))
            # The gazette data source: reads, writes and streaming latency (own stack).
            result.update(spark_source_bench.run(Path(tmp)))
        finally:
            server.terminate()
            for name in ("single", "three"):
                if (Path(tmp) / name / local_stack.STATE_FILE).exists():
                    local_stack.down(Path(tmp) / name)
    # On its own etcd, after the broker figures, so it doesn't compete with them.
    result.update(allocator_bench.run())
    result["runs"] = RUNS
    print(json.dumps(result, sort_keys=True))
    results = Path(__file__).parent / "results"
    results.mkdir(exist_ok=True)
    (results / f"bench-{int(time.time())}.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
