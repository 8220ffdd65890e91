"""Processes of ours spawn subprocesses after using gRPC: `local up` its brokers,
`journals edit` the $EDITOR, Spark its JVM. With gRPC's fork support on (its
default), a forked child restarts gRPC's poller threads just as the spawn closes
their descriptors, and dies before it can exec (SIGSEGV, or SIGABRT after
"epoll_wait error: Bad file descriptor"): importing gazette_core turns it off."""

from __future__ import annotations

import os
import subprocess
import sys

# A process that imports gazette_core, keeps gRPC busy on an event loop, and spawns
# children (with a preexec_fn, as PySpark starts its JVM) from another thread.
PROGRAM = """
import gazette_core
import asyncio, collections, signal, subprocess, sys
import grpc

def spawn():
    return subprocess.run([sys.executable, "-c", "pass"], capture_output=True,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))

async def main(n):
    server = grpc.aio.server()
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    call = grpc.aio.insecure_channel(f"127.0.0.1:{port}").unary_unary("/x.Y/Z")
    async def busy():
        while True:
            try:
                await call(b"", timeout=1)
            except grpc.aio.AioRpcError:
                pass
    workers = [asyncio.create_task(busy()) for _ in range(4)]
    codes = collections.Counter()
    for _ in range(n):
        codes[(await asyncio.to_thread(spawn)).returncode] += 1
    for task in workers:
        task.cancel()
    print(dict(codes))

asyncio.run(main(int(sys.argv[1])))
"""


def test_children_spawned_while_grpc_is_busy_all_start() -> None:
    env = {k: v for k, v in os.environ.items() if k != "GRPC_ENABLE_FORK_SUPPORT"}
    proc = subprocess.run([sys.executable, "-c", PROGRAM, "150"], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "{0: 150}", proc.stdout  # no child died before exec
