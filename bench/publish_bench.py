"""Publishing figures: small JSON messages through a Publisher against raw AppendService records.

- `publish_msgs_per_s`: `Publisher.publish_committed` of small JSON messages (the
  consumer bench's StructTick) to one R=1 journal, until the last batch is acknowledged;
- `publish_uncommitted_msgs_per_s`: the same through `publish_uncommitted` (the
  transactional path), its ACK appended at the end;
- `publish_records_per_s`: records of the same size as those messages enqueued
  on the AppendService directly (broker_bench.record_rate), measured in the
  same run, alternating with the publish runs; `publish_ratio` and
  `publish_uncommitted_ratio` are the publish rates against it.

Each figure is the median of RUNS runs. Run alone with `python -m bench.publish_bench`.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench import broker_bench
from bench.consume_bench import StructTick as Tick
from gazette_core.broker.client.append_service import AppendService, AsyncAppend
from gazette_core.broker.client.appender import append_retrying
from gazette_core.broker.client.journals import apply_journals
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.local import stack as local_stack
from gazette_core.message.framing import CONTENT_TYPE_LABEL, JSON_LINES, Framing, framing_for
from gazette_core.message.interfaces import Message
from gazette_core.message.publisher import Publisher
from gazette_core.testing.broker import journal_spec, journal_stub

MESSAGES = int(os.environ.get("BENCH_PUBLISH_MSGS", "200000"))
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
YIELD_EVERY = 4096  # as record_rate: a producer loop lets batches go out now and then
RECORDS = "bench/publish/records"
COMMITTED = "bench/publish/committed"
UNCOMMITTED = "bench/publish/uncommitted"


def _ticks(count: int) -> list[Tick]:
    # Keys of one width, so every message (and the raw record) has the same size.
    return [Tick(key=f"k{i % 1000:04d}") for i in range(count)]


def _sample_record() -> bytes:
    """A framed Tick as a Publisher writes it: the size of the raw records."""
    journals: dict[str, list[bytes]] = {}

    class Capture:
        def enqueue(self, journal: str, record: bytes) -> None:
            journals.setdefault(journal, []).append(record)

    publisher = Publisher(Capture())  # type: ignore[arg-type]
    publisher.publish_committed(_mapping(RECORDS), _ticks(1)[0])
    return journals[RECORDS][0]


def _mapping(journal: str) -> Callable[[Message], tuple[str, Framing]]:
    route = (journal, framing_for(JSON_LINES))
    return lambda _: route


async def publish_rate(stub: pb_grpc.JournalStub, journal: str, count: int,
                       uncommitted: bool) -> float:
    """Messages per second published until the last of them (and its ACK) is committed."""
    mapping = _mapping(journal)
    messages = _ticks(count)
    service = AppendService(stub)  # type: ignore[arg-type]
    service.start()
    publisher = Publisher(service)
    publish = publisher.publish_uncommitted if uncommitted else publisher.publish_committed
    start = time.perf_counter()
    handles: dict[int, AsyncAppend] = {}
    for i, msg in enumerate(messages):
        handle = publish(mapping, msg)
        handles[id(handle)] = handle
        if i % YIELD_EVERY == YIELD_EVERY - 1:
            await asyncio.sleep(0)
    for ack_journal, ack in publisher.build_ack_intents():
        handle = service.enqueue(ack_journal, ack)
    await handle  # Batches of a journal commit in order: the last one means all did.
    elapsed = time.perf_counter() - start
    await service.stop()
    assert all(h.future.exception() is None for h in handles.values())
    return count / elapsed


async def measure(endpoint: str) -> dict[str, float]:
    """Every figure against the broker at `endpoint` (its journals are created here)."""
    labels = ((CONTENT_TYPE_LABEL, JSON_LINES),)
    record = _sample_record()
    rates: dict[str, list[float]] = {"records": [], "committed": [], "uncommitted": []}
    changes = [pb.ApplyRequest.Change(upsert=journal_spec(name, length=512 << 20, refresh_s=60,
                                                          labels=labels), expect_mod_revision=-1)
               for name in (RECORDS, COMMITTED, UNCOMMITTED)]
    async with journal_stub(endpoint) as stub:
        await apply_journals(stub, pb.ApplyRequest(changes=changes))  # type: ignore[arg-type]
        for name in (RECORDS, COMMITTED, UNCOMMITTED):
            await append_retrying(stub, name, b"\n")  # type: ignore[arg-type]  # waits for assignment
        for _ in range(RUNS):  # alternated, so drifts of the machine hit all alike
            rates["records"].append(
                await broker_bench.record_rate(stub, RECORDS, MESSAGES, (record,)))
            rates["committed"].append(await publish_rate(stub, COMMITTED, MESSAGES, False))
            rates["uncommitted"].append(await publish_rate(stub, UNCOMMITTED, MESSAGES, True))
    out = {
        "publish_records_per_s": statistics.median(rates["records"]),
        "publish_msgs_per_s": statistics.median(rates["committed"]),
        "publish_uncommitted_msgs_per_s": statistics.median(rates["uncommitted"]),
        "publish_record_bytes": float(len(record)),
    }
    out["publish_ratio"] = out["publish_msgs_per_s"] / out["publish_records_per_s"]
    out["publish_uncommitted_ratio"] = (out["publish_uncommitted_msgs_per_s"]
                                        / out["publish_records_per_s"])
    return {k: round(v, 3) for k, v in out.items()}


def run(tmp: Path) -> dict[str, float]:
    """Every figure, on a one-broker stack of its own under `tmp`."""
    stack = local_stack.up(tmp / "publish", brokers=1, activate=False)
    try:
        return asyncio.run(measure(stack.brokers[0].endpoint))
    finally:
        local_stack.down(stack.directory)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="gazette-publish-bench-") as tmp:
        print(json.dumps(run(Path(tmp)), sort_keys=True))
