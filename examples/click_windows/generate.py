"""Append clicks to examples/click-windows/clicks: random users and pages, event times in order.

Click n has `ts` = start + n * spacing, so a run covers `clicks * spacing`
seconds of event time, whatever the wall time it takes. Each click is
published committed (a UUID of this run's producer, outside any transaction).
Prints `{"clicks": N, "first_ts": ..., "last_ts": ...}`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from examples.click_windows.messages import CLICKS_JOURNAL, Click
from examples.local import default_broker
from gazette_core.broker.client.append_service import AppendService
from gazette_core.broker.client.channel import close_channels, journal_stub
from gazette_core.broker.client.routing import JournalClient, Router
from gazette_core.message.framing import journal_framing
from gazette_core.message.publisher import Publisher
from gazette_core.message.reader import journal_spec

PAGES = ("/", "/pricing", "/docs", "/blog", "/signup")


@dataclass(frozen=True)
class Options:
    clicks: int = 1000
    users: int = 8
    start: datetime | None = None  # None: now
    spacing: float = 0.1  # seconds of event time between clicks
    seed: int = 1


def iso(ts: datetime) -> str:
    """The form of Click.ts: UTC, milliseconds, a Z suffix."""
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z"


def clicks(opts: Options) -> list[Click]:
    rng = random.Random(opts.seed)
    start = opts.start or datetime.now(UTC)
    return [Click(user=f"user-{rng.randrange(opts.users):02d}", page=rng.choice(PAGES),
                  ts=iso(start + timedelta(seconds=n * opts.spacing)))
            for n in range(opts.clicks)]


async def generate(client: JournalClient, opts: Options) -> dict[str, int | str]:
    """Publish the clicks of `opts`; return once every one is committed."""
    made = clicks(opts)
    framing = journal_framing(await journal_spec(client, CLICKS_JOURNAL))
    appender = AppendService(client)
    appender.start()
    try:
        publisher = Publisher(appender)
        last = None
        for click in made:
            last = publisher.publish_committed(lambda _: (CLICKS_JOURNAL, framing), click)
        if last is not None:
            await last  # batches of one journal commit in order
    finally:
        await appender.stop()
    return {"clicks": len(made), "first_ts": made[0].ts if made else "",
            "last_ts": made[-1].ts if made else ""}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m examples.click_windows.generate",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--broker.address", dest="address", default=default_broker(),
                        help="Broker endpoint (default: $BROKER_ADDRESS, else the local stack's)")
    parser.add_argument("--clicks", type=int, default=Options.clicks, help="how many clicks")
    parser.add_argument("--users", type=int, default=Options.users, help="how many users")
    parser.add_argument("--start", type=datetime.fromisoformat, default=None,
                        help="event time of the first click, ISO 8601 (default: now)")
    parser.add_argument("--spacing", type=float, default=Options.spacing,
                        help="seconds of event time between clicks")
    parser.add_argument("--seed", type=int, default=Options.seed, help="random seed")
    args = parser.parse_args(argv)
    if args.start is not None and args.start.tzinfo is None:
        args.start = args.start.replace(tzinfo=UTC)
    opts = Options(clicks=args.clicks, users=args.users, start=args.start,
                   spacing=args.spacing, seed=args.seed)
    print(json.dumps(asyncio.run(_run(args.address, opts))))


async def _run(address: str, opts: Options) -> dict[str, int | str]:
    try:
        return await generate(Router(journal_stub(address)), opts)
    finally:
        await close_channels()


if __name__ == "__main__":
    main()
