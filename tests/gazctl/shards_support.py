"""A local stack running the stream-sum consumers, for `gazctl shards` tests.

One stack per test module: etcd, a broker and two consumer processes running
`examples.stream_sum:Summer`, with the example's journals and shards applied
through gazctl itself. gazctl finds them by $BROKER_ADDRESS and
$CONSUMER_ADDRESS.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from gazette_core.broker.client.channel import close_channels
from gazette_core.consumer.api.client import list_shards
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.local import stack as local_stack
from tests.gazctl.support import ok, stop_stack

APP = "examples.stream_sum:Summer"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "stream_sum"
LOGS = "examples/stream-sum/recovery-logs"
CHUNKS = "examples/stream-sum/chunks"
EXAMPLE_SHARDS = [f"chunks-part-{i:03d}" for i in range(8)]


@contextmanager
def shard_stack(directory: Path, lease: int | None = None) -> Iterator[local_stack.Stack]:
    """The running stack, its example shards all served by a primary.

    `lease` is the processes' Etcd lease TTL (how long a killed one keeps its shards).
    """
    try:
        stack = local_stack.up(directory, brokers=1, consumers=2, app=APP, timeout=60,
                               activate=False, lease=lease)
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("BROKER_ADDRESS", stack.brokers[0].endpoint)
            mp.setenv("CONSUMER_ADDRESS", stack.consumers[0].endpoint)
            ok("journals", "apply", "--specs", str(EXAMPLE / "journals.yaml"))
            ok("shards", "apply", "--specs", str(EXAMPLE / "shards.yaml"))
            wait_primaries(stack, "")
            yield stack
    finally:
        stop_stack(directory)


def shards(stack: local_stack.Stack, selector: str = "") -> list[cpb.ListResponse.Shard]:
    """The shards matching `selector`, straight from a consumer."""
    async def main() -> list[cpb.ListResponse.Shard]:
        try:
            return list((await list_shards(stack.consumers[0].endpoint, selector)).shards)
        finally:
            await close_channels()

    return asyncio.run(main())


def primary_of(shard: cpb.ListResponse.Shard) -> str:
    route = shard.route
    return route.members[route.primary].suffix if route.primary >= 0 else ""


def wait_primaries(stack: local_stack.Stack, selector: str, limit: float = 60) -> None:
    """Wait until every shard matching `selector` has a PRIMARY replica."""
    deadline = time.monotonic() + limit
    while True:
        listed = shards(stack, selector)
        if listed and all(cpb.ReplicaStatus.PRIMARY in [s.code for s in shard.status]
                          for shard in listed):
            return
        assert time.monotonic() < deadline, f"no primaries for {selector!r}: {listed}"
        time.sleep(0.1)


def log_journals(*shard_ids: str) -> str:
    """Journal YAML creating the recovery logs of `shard_ids`."""
    children = "".join(f"  - name: {LOGS}/{shard}\n    revision: -1\n" for shard in shard_ids)
    return (f"name: {LOGS}/\nreplication: 1\nlabels:\n  - name: content-type\n"
            f"    value: application/x-gazette-recoverylog\nfragment:\n  length: 1048576\n"
            f"  compression_codec: NONE\n  stores:\n    - file:///\n"
            f"  refresh_interval: 10s\nchildren:\n{children}")


def shard_yaml(*shard_ids: str, source: str = f"{CHUNKS}/part-000",
               extra: str = "", revision: int = 0) -> str:
    """A shard set of `shard_ids`, each reading `source` with a recovery log."""
    entries = "".join(f"- id: {shard}\n  sources:\n  - journal: {source}\n"
                      f"  revision: {revision}\n{extra}" for shard in shard_ids)
    return (f"common:\n  recovery_log_prefix: {LOGS}\n  hint_prefix: /gazette/hints\n"
            f"  hint_backups: 1\n  max_txn_duration: 1s\n  labels:\n  - name: store\n"
            f"    value: json\nshards:\n{entries}")
