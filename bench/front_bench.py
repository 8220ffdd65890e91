"""What serving gRPC behind the one-port front costs: relayed gRPC against direct gRPC.

`python -m bench.front_bench` starts a server process holding one grpc.aio
server with byte-echo methods, reachable directly on its own TCP port and
through two fronts (gazette_core.server.front): one relaying on the event
loop (what servers use), one relaying by kernel splicing in threads
(bench/front_splice.py). The client (this process) measures, in rounds
that rotate the order of the three paths so a drifting machine load moves
them alike: streaming
throughput down (server to client, as reads) and up (client to server, as
appends) in 128 KiB messages, and the latency of 1 KiB unary calls and of
1 KiB round trips on one bidirectional stream. It does so twice: with the
server's event loop idle but for gRPC, and (with a quarter of the work) with
it kept busy by Python work in millisecond slices, as a loaded broker's is.
It prints one JSON object: for each, the medians of each path and their
ratios to direct gRPC.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import grpc

from bench import front_splice
from gazette_core.server.front import Front
from gazette_core.server.relay import relay

MiB = 1 << 20
MESSAGE = 128 << 10
SMALL = 1024
PATHS = ("direct", "loop", "splice")
_SERVICE = "bench.Front"


def _identity(b: bytes) -> bytes:
    return b


def _handlers() -> grpc.GenericRpcHandler:
    async def down(request: bytes, _: object) -> object:
        count = int.from_bytes(request[:8], "big")
        payload = bytes(MESSAGE)
        for _ in range(count):
            yield payload

    async def up(requests: object, _: object) -> bytes:
        total = 0
        async for piece in requests:  # type: ignore[attr-defined]
            total += len(piece)
        return total.to_bytes(8, "big")

    async def echo(request: bytes, _: object) -> bytes:
        return request

    async def ping(requests: object, _: object) -> object:
        async for piece in requests:  # type: ignore[attr-defined]
            yield piece

    kinds = {"Down": grpc.unary_stream_rpc_method_handler(down, _identity, _identity),
             "Up": grpc.stream_unary_rpc_method_handler(up, _identity, _identity),
             "Echo": grpc.unary_unary_rpc_method_handler(echo, _identity, _identity),
             "Ping": grpc.stream_stream_rpc_method_handler(ping, _identity, _identity)}
    return grpc.method_handlers_generic_handler(_SERVICE, kinds)


async def _keep_busy() -> None:
    """Python work on the server's loop, as a broker serving other requests has: slices of
    about a millisecond, the loop taking its callbacks between them."""
    while True:
        until = time.perf_counter() + 0.001
        while time.perf_counter() < until:
            pass
        await asyncio.sleep(0)


async def serve(busy: bool) -> None:
    """The server side: print the three ports as JSON, serve until stdin closes."""
    if busy:
        asyncio.get_running_loop().create_task(_keep_busy())
    options = [("grpc.max_receive_message_length", 16 * MiB), ("grpc.so_reuseport", 0)]
    server = grpc.aio.server(options=options)
    server.add_generic_rpc_handlers((_handlers(),))
    ports = {"direct": server.add_insecure_port("127.0.0.1:0")}
    fronts = {"loop": Front("loop", "127.0.0.1", 0, relay=relay),
              "splice": Front("splice", "127.0.0.1", 0, relay=front_splice.relay)}
    for front in fronts.values():
        front.bind()
        front.attach_grpc(server.add_insecure_port)
    await server.start()
    for name, front in fronts.items():
        front.serve(None)
        ports[name] = int(front.port)
    print(json.dumps(ports), flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    for front in fronts.values():
        await front.stop()
    await server.stop(0)


def _method(channel: grpc.Channel, kind: str, name: str) -> Callable[..., object]:
    factory = getattr(channel, kind)
    return factory(f"/{_SERVICE}/{name}", request_serializer=_identity,  # type: ignore[no-any-return]
                   response_deserializer=_identity)


def _quantiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return ordered[len(ordered) // 2], ordered[int(len(ordered) * 0.99)]


def measure(port: int, mib: int, calls: int) -> dict[str, float]:
    """One round's figures for the path listening on `port`."""
    options = [("grpc.max_receive_message_length", 16 * MiB)]
    with grpc.insecure_channel(f"127.0.0.1:{port}", options=options) as channel:
        down = _method(channel, "unary_stream", "Down")
        up = _method(channel, "stream_unary", "Up")
        echo = _method(channel, "unary_unary", "Echo")
        ping = _method(channel, "stream_stream", "Ping")
        count = mib * MiB // MESSAGE
        echo(b"warm-up")
        start = time.perf_counter()
        received = sum(len(m) for m in down(count.to_bytes(8, "big")))  # type: ignore[attr-defined]
        down_s = time.perf_counter() - start
        payload = bytes(MESSAGE)
        start = time.perf_counter()
        up(iter([payload] * count))
        up_s = time.perf_counter() - start
        assert received == count * MESSAGE
        unary = _timed(lambda: echo(bytes(SMALL)), calls)
        stream = _ping_pong(ping, calls)
    (u50, u99), (s50, s99) = _quantiles(unary), _quantiles(stream)
    return {"down_mb_s": mib / down_s, "up_mb_s": mib / up_s, "unary_p50_ms": u50,
            "unary_p99_ms": u99, "stream_p50_ms": s50, "stream_p99_ms": s99}


def _timed(op: Callable[[], object], count: int) -> list[float]:
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        op()
        samples.append((time.perf_counter() - start) * 1e3)
    return samples


def _ping_pong(ping: Callable[..., object], count: int) -> list[float]:
    """Round trips of 1 KiB on one bidirectional stream, each sent once the last returned."""
    import queue

    outgoing: queue.Queue[bytes | None] = queue.Queue()

    def requests() -> Iterator[bytes]:
        while (item := outgoing.get()) is not None:
            yield item

    responses = iter(ping(requests()))  # type: ignore[call-overload]
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        outgoing.put(bytes(SMALL))
        next(responses)
        samples.append((time.perf_counter() - start) * 1e3)
    outgoing.put(None)
    for _ in responses:
        pass
    return samples


def run(rounds: int, mib: int, calls: int, busy: bool) -> dict[str, object]:
    argv = [sys.executable, "-m", "bench.front_bench", "--serve", *(["--busy"] if busy else [])]
    server = subprocess.Popen(argv,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        ports = json.loads(server.stdout.readline())
        figures: dict[str, list[dict[str, float]]] = {path: [] for path in PATHS}
        for i in range(rounds):
            order = PATHS[i % 3:] + PATHS[:i % 3]  # rotate who goes first
            for path in order:
                figures[path].append(measure(ports[path], mib, calls))
                print(f"{'busy' if busy else 'idle'} round {i + 1}/{rounds}: {path} done",
                      file=sys.stderr, flush=True)
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=30)
    medians = {path: {key: statistics.median(r[key] for r in runs) for key in runs[0]}
               for path, runs in figures.items()}
    ratios = {path: {key: round(value / medians["direct"][key], 3)
                     for key, value in medians[path].items()}
              for path in PATHS if path != "direct"}
    return {"rounds": rounds, "mib_per_stream": mib, "calls": calls,
            "medians": {p: {k: round(v, 3) for k, v in m.items()} for p, m in medians.items()},
            "relay_vs_direct": ratios}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--busy", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--mib", type=int, default=128, help="MiB each way per round")
    parser.add_argument("--calls", type=int, default=1000, help="1 KiB round trips per round")
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.busy))
        return
    # A busy loop slows every path tenfold, and the splicing relay far more: a
    # quarter of the work keeps the run to minutes.
    print(json.dumps({"idle_loop": run(args.rounds, args.mib, args.calls, busy=False),
                      "busy_loop": run(args.rounds, max(1, args.mib // 4),
                                       max(10, args.calls // 4), busy=True)}, indent=2))


if __name__ == "__main__":
    main()
