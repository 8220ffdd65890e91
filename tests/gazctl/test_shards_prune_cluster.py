"""`gazctl shards prune` on a real standalone Spark master and worker, against stream-sum on
real consumers: a dry run first, then deletes refused by a read-only store, counted."""

from __future__ import annotations

import asyncio
import json

from examples.stream_sum.summer import Summer
from gazctl.render import humanize_bytes
from gazette_core.broker.protocol.fragment_ext import content_path
from gazette_core.testing.consumer import ConsumerHarness, consumer_harness
from tests.gazctl.support import ok
from tests.gazctl.test_shards_prune_recover import (
    LOG_A,
    LOG_B,
    SUITE,
    A,
    B,
    add_backup_slot,
    add_consumer,
    gazctl,
    hints_ready,
    install,
    needed,
    on_disk,
    persisted,
    prunable_history,
)
from tests.spark_jobs.cluster_support import Cluster, cluster  # noqa: F401  (fixture)
from tests.spark_jobs.test_prune_plan import undeletable


async def test_dry_run_then_a_read_only_store_on_a_standalone_cluster(
        cluster: Cluster) -> None:  # noqa: F811
    async with consumer_harness(Summer, consumers=0) as h:
        await add_consumer(h)
        await install(h)
        await prunable_history(h, seed=4)
        await add_backup_slot(h, B)
        hints = await hints_ready(h)
        frags = await persisted(h, LOG_A)
        await persisted(h, LOG_B)
        doomed = [f for f in frags if not needed(hints[A], f)]
        assert len(doomed) >= 3
        files = {log: on_disk(h, log) for log in (LOG_A, LOG_B)}
        args = ("prune", "-l", f"suite={SUITE}", "--spark-master", cluster.master,
                "--file-root", str(h.directory / "fragments"))

        dry = await asyncio.to_thread(ok, "shards", *args, "--dry-run", "--consumer.address",
                                      h.live[0].endpoint, "--broker.address", h.broker_endpoint)

        rows = {line.split()[0]: line.split()[1:] for line in dry.stdout.splitlines()[1:]}
        notes = dry.stderr.splitlines()
        assert notes[0].startswith(f"note: skipped recovery log {LOG_B}: ")
        assert notes[1:] == [f"would delete {content_path(f)} ({humanize_bytes(f.end - f.begin)})"
                             for f in doomed] + ["dry run: nothing was deleted"]
        assert rows["Pruned"][0] == str(len(doomed))
        assert rows["Skipped"][1] == "1"  # b: no backup.1 hints
        assert still_on_disk(h, files)

        with undeletable(h.directory / "fragments" / LOG_A):
            out = (await gazctl(h, *args, "-o", "json")).splitlines()

        summary = json.loads(out[-1])
        assert (summary["permission_denied"], summary["fragments_pruned"], summary["failed"]) == (
            len(doomed), 0, 0)
        assert [json.loads(line)["outcome"] for line in out[:-1]] == (
            ["permission_denied"] * len(doomed))
        assert still_on_disk(h, files)


def still_on_disk(h: ConsumerHarness, before: dict[str, list[tuple[int, int]]]) -> bool:
    """Whether every fragment listed in `before` is still there. The running consumers
    may persist new ones meanwhile, so the listings need not be equal."""
    return all(set(frags) <= set(on_disk(h, log)) for log, frags in before.items())

