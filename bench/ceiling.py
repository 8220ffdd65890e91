"""The gRPC ceiling: a bare grpc.aio server with no broker logic behind it.

Upload is client-streaming AppendRequests that the server discards (like
Append without spool or etcd); Download server-streams ReadResponses (like
Read without an index). Messages are our protocol's own, so protobuf costs
match the broker's. The server runs in its own process, as the broker does.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator

import grpc

from gazette_core.broker.protocol import protocol_pb2 as pb

UPLOAD = "/bench.Ceiling/Upload"
DOWNLOAD = "/bench.Ceiling/Download"
OPTIONS = [("grpc.max_receive_message_length", 16 << 20),
           ("grpc.max_send_message_length", 16 << 20)]


async def _upload(requests: AsyncIterator[pb.AppendRequest], _: object) -> pb.AppendResponse:
    n = 0
    async for req in requests:
        n += len(req.content)
    return pb.AppendResponse(total_chunks=n)


async def _download(req: pb.ReadRequest, _: object) -> AsyncIterator[pb.ReadResponse]:
    chunk = bytes(req.offset)  # the request's offset carries the chunk size
    for i in range(req.end_offset // len(chunk)):
        yield pb.ReadResponse(offset=i * len(chunk), content=chunk)


async def measure_mini_append(port: int, count: int) -> tuple[float, float]:
    """(p50, p99) ms of sequential Append-shaped RPCs: header, 1 KiB, commit, response.

    The floor for a broker's small-append latency: the same messages and round
    trip with nothing done on the server.
    """
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=OPTIONS) as ch:
        call = ch.stream_unary(UPLOAD, pb.AppendRequest.SerializeToString,
                               pb.AppendResponse.FromString)
        await ch.channel_ready()
        msgs = [pb.AppendRequest(journal="bench/latency"),
                pb.AppendRequest(content=bytes(1024)), pb.AppendRequest()]
        samples = []
        for _ in range(count):
            start = time.perf_counter()
            await call(iter(msgs))
            samples.append((time.perf_counter() - start) * 1e3)
    samples.sort()
    return samples[len(samples) // 2], samples[int(len(samples) * 0.99)]


async def serve(port: int) -> None:
    server = grpc.aio.server(options=OPTIONS)
    handlers = {
        "Upload": grpc.stream_unary_rpc_method_handler(
            _upload, pb.AppendRequest.FromString, pb.AppendResponse.SerializeToString),
        "Download": grpc.unary_stream_rpc_method_handler(
            _download, pb.ReadRequest.FromString, pb.ReadResponse.SerializeToString),
    }
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler("bench.Ceiling",
                                                                          handlers)])
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    await server.wait_for_termination()


def start_server(port: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "bench.ceiling", str(port)])


async def measure_upload(port: int, chunk: int, total: int, runs: int) -> float:
    """Median MB/s of client-streaming `total` bytes in `chunk`-sized AppendRequests."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=OPTIONS) as ch:
        call = ch.stream_unary(UPLOAD, pb.AppendRequest.SerializeToString,
                               pb.AppendResponse.FromString)
        await ch.channel_ready()
        content = bytes(chunk)
        rates = []
        for _ in range(runs):
            start = time.perf_counter()
            await call(pb.AppendRequest(content=content) for _ in range(total // chunk))
            rates.append(total / (time.perf_counter() - start) / 1e6)
    return statistics.median(rates)


async def measure_download(port: int, chunk: int, total: int, runs: int) -> float:
    """Median MB/s of server-streaming `total` bytes in `chunk`-sized ReadResponses."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=OPTIONS) as ch:
        call = ch.unary_stream(DOWNLOAD, pb.ReadRequest.SerializeToString,
                               pb.ReadResponse.FromString)
        await ch.channel_ready()
        rates = []
        for _ in range(runs):
            start = time.perf_counter()
            n = 0
            async for resp in call(pb.ReadRequest(offset=chunk, end_offset=total)):
                n += len(resp.content)
            rates.append(n / (time.perf_counter() - start) / 1e6)
    return statistics.median(rates)


if __name__ == "__main__":
    asyncio.run(serve(int(sys.argv[1])))
