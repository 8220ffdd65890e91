"""The chunker: publishes random streams of chunks, then verifies their sums.

Streams are spread over the chunk partitions by stream id (a modulo mapping
over the watched list of journals labelled `message-type=Chunk`), each chunk
published with `publish_committed`. Meanwhile the sums journal is read with
`read_committed()`: every finished stream must have exactly one Sum, equal to
the CRC-64/ECMA of its data. The result is one JSON line:
{"streams", "verified", "wrong", "duplicated", "missing"}.

    python -m examples.stream_sum.chunker --broker.address http://127.0.0.1:8080
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import secrets
import time
from dataclasses import dataclass

from examples.local import default_broker
from examples.stream_sum.messages import Chunk, Sum
from examples.stream_sum.names import CHUNK_SIZE, CHUNK_TYPE, MESSAGE_TYPE, SUMS_JOURNAL
from examples.stream_sum.tally import Tally
from gazette_core.broker.client.append_service import AppendService
from gazette_core.broker.client.channel import journal_stub
from gazette_core.broker.client.journals import fetch_write_head
from gazette_core.broker.client.routing import JournalClient, Router, target_for
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.message.committed import read_committed
from gazette_core.message.mapping import Partitions, modulo_mapping
from gazette_core.message.publisher import Publisher
from gazette_core.tasks import cancel_and_wait


@dataclass
class Options:
    streams: int = 100          # streams to send
    concurrency: int = 16       # streams open at once
    max_chunks: int = 20        # data chunks per stream: 1..max_chunks
    rate: float = 0.0           # chunks per second overall (0: as fast as acknowledged)
    timeout: float = 60.0       # wait for the last sums, after publishing ends
    settle: float = 1.0         # keep reading after the last sum, to catch duplicates
    seed: int | None = None


HELP = {"streams": "Streams to send", "concurrency": "Streams open at once",
        "max_chunks": "Data chunks per stream, at most", "rate": "Chunks per second (0: no limit)",
        "timeout": "Seconds to wait for the last sums", "settle":
        "Seconds to keep reading after the last sum, for duplicates", "seed": "Random seed"}


def chunk_selector() -> pb.LabelSelector:
    return pb.LabelSelector(include=pb.LabelSet(
        labels=[pb.Label(name=MESSAGE_TYPE, value=CHUNK_TYPE)]))


async def run(client: JournalClient, opts: Options) -> dict[str, int]:
    """Publish `opts.streams` streams and verify their sums; the JSON summary."""
    tally = Tally()
    start = await fetch_write_head(target_for(client, SUMS_JOURNAL, primary=True).stub,
                                   SUMS_JOURNAL)
    reading = asyncio.create_task(_read_sums(client, start, tally))
    try:
        await _publish(client, opts, tally)
        deadline = time.monotonic() + opts.timeout
        while tally.missing and time.monotonic() < deadline and not reading.done():
            await asyncio.sleep(0.1)
        if not reading.done():
            await asyncio.sleep(opts.settle)
    finally:
        await cancel_and_wait(reading)
    return tally.summary()


async def _read_sums(client: JournalClient, offset: int, tally: Tally) -> None:
    async for env in read_committed(client, SUMS_JOURNAL, lambda _: Sum(), offset=offset):
        msg = env.message
        assert isinstance(msg, Sum)
        tally.observe(msg.id, msg.seq_no, msg.value)


async def _publish(client: JournalClient, opts: Options, tally: Tally) -> None:
    rng = random.Random(opts.seed)
    run_id = secrets.token_hex(4)
    partitions = Partitions(client, chunk_selector())
    await partitions.start()
    appender = AppendService(client)
    appender.start()
    try:
        mapping = modulo_mapping(lambda m: m.id, partitions)  # type: ignore[attr-defined]
        publisher = Publisher(appender)
        todo = [f"{run_id}-{n:05d}" for n in range(opts.streams)]
        open_: dict[str, int] = {}  # stream -> data chunks still to send
        sent, began = 0, time.monotonic()
        while todo or open_:
            while todo and len(open_) < opts.concurrency:
                open_[todo.pop()] = rng.randint(1, opts.max_chunks)
            stream = rng.choice(list(open_))
            left = open_[stream]
            data = rng.randbytes(CHUNK_SIZE) if left else b""
            tally.sent(stream, data)
            seq_no = tally.expected[stream].seq_no
            last = publisher.publish_committed(mapping, Chunk.of(stream, seq_no, data))
            open_[stream] = left - 1
            if not left:
                del open_[stream]
            sent += 1
            if sent % 256 == 0:
                await last  # bounds what is queued, as acknowledgements come back
            if opts.rate:
                await asyncio.sleep(max(0.0, began + sent / opts.rate - time.monotonic()))
        await last
    finally:
        await appender.stop()
        await partitions.stop()


def _parse(argv: list[str] | None) -> tuple[str, Options]:
    parser = argparse.ArgumentParser(prog="python -m examples.stream_sum.chunker",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--broker.address", dest="address", default=default_broker(),
                        help="Broker endpoint (default: $BROKER_ADDRESS, else the local stack's)")
    defaults = Options()
    for name, text in HELP.items():
        value = getattr(defaults, name)
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, default=value,
                            type=float if isinstance(value, float) else int,
                            help=f"{text} (default: {value})")
    args = parser.parse_args(argv)
    opts = Options(**{k: v for k, v in vars(args).items() if k != "address"})
    return args.address, opts


async def _main(address: str, opts: Options) -> dict[str, int]:
    return await run(Router(journal_stub(address)), opts)


def main(argv: list[str] | None = None) -> int:
    address, opts = _parse(argv)
    summary = asyncio.run(_main(address, opts))
    print(json.dumps(summary))
    good = summary["verified"] == summary["streams"]
    return 0 if good and not (summary["wrong"] or summary["duplicated"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
