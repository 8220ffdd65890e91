"""The click_windows example on a real local stack and Spark in local mode: the counts it
writes are those of the committed clicks, each closed window once, across a restart from its
checkpoint."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, cast

import pytest

from examples.click_windows import job
from examples.click_windows.generate import Options, generate
from examples.click_windows.messages import CLICKS_JOURNAL, COUNTS_JOURNAL, Click, WindowCount
from gazette_core.broker.client.routing import Router
from gazette_core.local.stack import Stack
from gazette_core.message.committed import read_committed
from gazette_core.message.interfaces import JSONMessage
from spark_jobs.session import get_session
from tests.gazctl.support import ok, wait_primaries, with_broker
from tests.spark_jobs.frames_support import spark_stack

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

JOURNALS_YAML = Path(job.__file__).with_name("journals.yaml")
START = datetime(2026, 1, 1, tzinfo=UTC)
WINDOW_S, LATENESS_S = 10, 5
Row = tuple[str, str, str, int]  # user, window_start, window_end, clicks
M = TypeVar("M", bound=JSONMessage)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with spark_stack(tmp_path_factory, "click-windows-stack") as stack:
        yield stack


def committed(address: str, journal: str, kind: type[M]) -> list[M]:
    """What `read_committed()` reads of `journal` up to its write head."""
    async def read(stub: JournalAsyncStub) -> list[M]:
        return [cast(M, env.message) async for env in read_committed(
            Router(stub), journal, lambda _: kind(), block=False)]
    return with_broker(address, read)


def closed_windows(clicks: list[Click]) -> list[Row]:
    """Counts per user per window of WINDOW_S whose end the watermark has passed."""
    times = [datetime.fromisoformat(c.ts) for c in clicks]
    watermark = max(times) - timedelta(seconds=LATENESS_S)
    counts: Counter[tuple[str, datetime]] = Counter()
    for click, ts in zip(clicks, times, strict=True):
        seconds = int((ts - START).total_seconds()) // WINDOW_S * WINDOW_S
        counts[click.user, START + timedelta(seconds=seconds)] += 1
    end = timedelta(seconds=WINDOW_S)
    return sorted((user, _iso(begin), _iso(begin + end), n)
                  for (user, begin), n in counts.items() if begin + end <= watermark)


def _iso(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def run_once(address: str, stack: Stack, checkpoint: Path) -> None:
    """The job until it has processed what the clicks journal holds (closing windows too)."""
    spark = get_session("local[2]", app_name="click-windows-test")
    query = job.start(spark, str(checkpoint), address, str(stack.directory / "fragments"),
                      window=f"{WINDOW_S} seconds", lateness=f"{LATENESS_S} seconds")
    try:
        query.processAllAvailable()
    finally:
        query.stop()


def test_written_counts_are_the_committed_clicks_closed_windows_once_each(
        stack: Stack, tmp_path: Path) -> None:
    address = stack.brokers[0].endpoint
    ok("journals", "apply", "--specs", str(JOURNALS_YAML), "--broker.address", address)
    for journal in (CLICKS_JOURNAL, COUNTS_JOURNAL):
        wait_primaries(address, f"name={journal}")
    # 30 s of event time: the run closes the windows up to 20 s and keeps the next open.
    with_broker(address, lambda stub: generate(Router(stub), Options(
        clicks=300, users=4, start=START, spacing=0.1, seed=1)))
    run_once(address, stack, tmp_path / "checkpoint")
    first = committed(address, CLICKS_JOURNAL, Click)
    assert rows(committed(address, COUNTS_JOURNAL, WindowCount)) == closed_windows(first)
    # 30 s more, and a restart from the checkpoint: the open window closes, none is written twice.
    with_broker(address, lambda stub: generate(Router(stub), Options(
        clicks=300, users=4, start=START + timedelta(seconds=30), spacing=0.1, seed=2)))
    run_once(address, stack, tmp_path / "checkpoint")
    clicks = committed(address, CLICKS_JOURNAL, Click)
    assert len(clicks) == 600
    written = rows(committed(address, COUNTS_JOURNAL, WindowCount))
    assert written == closed_windows(clicks)
    assert len(written) == 5 * 4  # windows up to 50 s, four users each


def rows(counts: list[WindowCount]) -> list[Row]:
    return sorted((c.user, c.window_start, c.window_end, c.clicks) for c in counts)
