"""The decoding ceiling: msgspec decoding consume_bench's small JSON messages into structs.

- `decode_ceiling_msgs_per_s`: the lines `consume_bench` publishes (a UUID, a key and
  a number), already in memory, decoded by msgspec into typed structs a buffer at a
  time (`decode_lines`, as readers decode a read chunk) and nothing else: the most
  a Python reader of these messages could do.
- `consume_ceiling_ratio`: consume_bench's `consume_ceiling_msgs_per_s` (read_committed
  of the same messages from a broker) against it, when given.

Run alone with `python -m bench.decode_bench`: it brings up a stack, publishes
BENCH_CONSUME_MSGS messages and alternates both ceilings (BENCH_DECODE_ROUNDS times),
printing their medians and the ratio.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import msgspec

from gazette_core.local import stack as local_stack
from gazette_core.message.uuid import Flags, build_uuid, new_producer_id

CHUNK = 32 << 10  # bytes decoded at a time, about a broker read chunk
ROUNDS = int(os.environ.get("BENCH_DECODE_ROUNDS", "3"))


class Tick(msgspec.Struct):
    uuid: str = ""
    key: str = ""
    sent_ns: int = 0


def lines(count: int) -> list[bytes]:
    """`count` records as consume_bench publishes its Ticks (keys over 1000 values)."""
    producer, clock = new_producer_id(), 1 << 60
    return [b'{"uuid":"%s","key":"k%04d","sent_ns":0}\n'
            % (str(build_uuid(producer, clock + 16 * i, Flags.OUTSIDE_TXN)).encode(), i % 1000)
            for i in range(count)]


def _chunks(records: list[bytes]) -> list[bytes]:
    out, at = [], 0
    while at < len(records):
        size, end = 0, at
        while end < len(records) and size < CHUNK:
            size += len(records[end])
            end += 1
        out.append(b"".join(records[at:end]))
        at = end
    return out


def decode_ceiling_msgs_per_s(count: int, runs: int = 3) -> float:
    """Median messages/s of decoding `count` records into structs, chunk by chunk."""
    chunks = _chunks(lines(count))
    decoder = msgspec.json.Decoder(Tick)
    rates = []
    for _ in range(runs):
        start, n = time.perf_counter(), 0
        for chunk in chunks:
            n += len(decoder.decode_lines(chunk))
        rates.append(n / (time.perf_counter() - start))
    return statistics.median(rates)


def run(count: int, consume_ceiling: float | None = None) -> dict[str, float]:
    """The decode ceiling of `count` messages, and consume_ceiling's ratio to it if given."""
    out = {"decode_ceiling_msgs_per_s": decode_ceiling_msgs_per_s(count)}
    if consume_ceiling:
        out["consume_ceiling_ratio"] = consume_ceiling / out["decode_ceiling_msgs_per_s"]
    return {k: round(v, 3) for k, v in out.items()}


async def _alternate(stack: local_stack.Stack, count: int, rounds: int) -> dict[str, float]:
    """Medians of consume_bench's ceiling and the decode ceiling, measured in turn."""
    from bench import consume_bench
    from gazette_core.testing.consumer import consumer_harness

    async with consumer_harness(consume_bench.CountApp, etcd_endpoint=stack.etcd.endpoint,
                                broker_endpoint=stack.brokers[0].endpoint) as h:
        head = await consume_bench._fill(h, count)
        consume, decode = [], []
        for _ in range(rounds):
            consume.append(await consume_bench._ceiling(h, head))
            decode.append(decode_ceiling_msgs_per_s(count))
    c, d = statistics.median(consume), statistics.median(decode)
    return {"consume_ceiling_msgs_per_s": c, "decode_ceiling_msgs_per_s": d,
            "consume_ceiling_ratio": c / d}


def main() -> None:
    from bench.consume_bench import MESSAGES, _closing

    with tempfile.TemporaryDirectory(prefix="gazette-decode-bench-") as tmp:
        stack = local_stack.up(Path(tmp) / "decode", brokers=1, activate=False)
        try:
            result = asyncio.run(_closing(_alternate(stack, MESSAGES, ROUNDS)))
        finally:
            local_stack.down(stack.directory)
    print(json.dumps({k: round(v, 3) for k, v in result.items()}, sort_keys=True))


if __name__ == "__main__":
    main()
