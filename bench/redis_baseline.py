"""The Redis Streams baseline of `records_per_s`: pipelined XADDs of 1 KiB entries.

`redis_xadd_pipelined_per_s` is the median rate of XADDs sent with redis-py
(and hiredis) in pipelines of 1000 (no MULTI), each entry one 1024-byte
field, to a redis-server started here on loopback, memory only (no RDB
snapshots, no AOF): Redis at its fastest, so the comparison is a strict one.
`records_vs_redis` is the run's `records_per_s` (1 KiB records through the
AppendService) against it.

`make bench` installs redis-server (Debian) and the `bench` extra (redis,
hiredis). Run alone with `python -m bench.redis_baseline`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from gazette_core.testing.etcd import free_port

DURATION_S = float(os.environ.get("BENCH_REDIS_SECONDS", "3"))
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
PIPELINE = 1000
ENTRY = bytes(range(256)) * 4  # 1 KiB, as the broker's records


def _connect(port: int, server: subprocess.Popen[bytes], timeout: float = 30.0) -> Any:
    """A client once the server answers PING; RuntimeError if it exits or never does."""
    import redis  # the `bench` extra: imported here so the rest of bench runs without it

    client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=30)
    deadline = time.monotonic() + timeout
    while True:
        try:
            client.ping()
            return client
        except redis.ConnectionError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server on port {port} did not start "
                                   f"(exit code {server.returncode})") from None
            time.sleep(0.05)  # polling a process we do not control: nothing to wait on


def _pipelined_rate(client: Any, seconds: float) -> float:
    """XADDs per second, in pipelines of PIPELINE, for about `seconds`."""
    client.delete("bench")
    sent, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        pipe = client.pipeline(transaction=False)
        for _ in range(PIPELINE):
            pipe.xadd("bench", {"d": ENTRY})
        pipe.execute()
        sent += PIPELINE
    rate = sent / (time.perf_counter() - start)
    if client.xlen("bench") != sent:
        raise RuntimeError(f"redis stream holds {client.xlen('bench')} entries, sent {sent}")
    client.delete("bench")
    return rate


def measure(records_per_s: float | None = None) -> dict[str, float]:
    """The Redis figure (and `records_vs_redis` if the run's `records_per_s` is given)."""
    server_bin = shutil.which("redis-server")
    if server_bin is None:
        raise RuntimeError("redis-server is not installed: `make redis` installs it")
    if importlib.util.find_spec("redis") is None:
        raise RuntimeError("the redis module is not installed: `make redis` installs it")
    with tempfile.TemporaryDirectory(prefix="gazette-redis-bench-") as tmp:
        port = free_port()
        with open(Path(tmp) / "redis.log", "wb") as log:
            server = subprocess.Popen(
                [server_bin, "--bind", "127.0.0.1", "--port", str(port), "--dir", tmp,
                 "--save", "", "--appendonly", "no", "--daemonize", "no"],
                stdout=log, stderr=subprocess.STDOUT)
        try:
            client = _connect(port, server)
            rates = [_pipelined_rate(client, DURATION_S) for _ in range(RUNS)]
            client.close()
        finally:
            server.terminate()
            try:
                server.wait(15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    out = {"redis_xadd_pipelined_per_s": statistics.median(rates)}
    if records_per_s is not None:
        out["records_vs_redis"] = records_per_s / out["redis_xadd_pipelined_per_s"]
    return {k: round(v, 3) for k, v in out.items()}


if __name__ == "__main__":
    print(json.dumps(measure(), sort_keys=True))
