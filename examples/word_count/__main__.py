"""`python -m examples.word_count publish TEXT` / `query PREFIX` against a consumer."""

from __future__ import annotations

import argparse
import asyncio
import json

from examples.local import default_consumer
from examples.word_count import api
from gazette_core.broker.client.channel import dial


async def _run(address: str, command: str, text: str) -> None:
    channel = dial(address)
    if command == "publish":
        print(f"published {await api.publish(channel, text)} n-grams")
    else:
        print(json.dumps(await api.query(channel, text)))
    await channel.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.word_count")
    parser.add_argument("command", choices=["publish", "query"])
    parser.add_argument("text", help="Text to publish, or a prefix to query")
    parser.add_argument("--consumer.address", dest="address", default=default_consumer(),
                        help="Consumer endpoint (default: $CONSUMER_ADDRESS, else the local "
                             "stack's first live consumer)")
    args = parser.parse_args(argv)
    asyncio.run(_run(args.address, args.command, args.text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
