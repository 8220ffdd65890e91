"""`gazette serve`: run a broker until SIGTERM or SIGINT, then persist and exit.

A broker whose Etcd lease is lost persists its spools too and exits with
EXIT_LEASE_LOST; a supervisor (e.g. `gazctl local up`) restarts it.
"""

from __future__ import annotations

import asyncio
import signal
import sys

from gazette_core.broker.config import BrokerConfig, parse_args
from gazette_core.broker.service import Broker
from gazette_core.server.process import LeaseLostExit, run_process

USAGE = ("usage: gazette serve [flags]       run a broker (gazette serve --help lists flags)\n"
         "       gazette consumer [flags]    run a consumer application "
         "(gazette consumer --help)")


async def serve(config: BrokerConfig) -> None:
    """Run a broker until a termination signal arrives or its Etcd lease is lost."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    broker = Broker(config)
    await broker.start()  # raises GazetteError with a clear message when it cannot
    print(f"gazette broker {config.zone}#{config.suffix} serving at {broker.endpoint}",
          file=sys.stderr, flush=True)
    lost = asyncio.create_task(broker.lease_lost.wait())
    stopping = asyncio.create_task(stop.wait())
    await asyncio.wait([lost, stopping], return_when=asyncio.FIRST_COMPLETED)
    if broker.lease_lost.is_set():
        # Appends are already refused; our journals may be someone else's by now.
        await broker.stop()
        raise LeaseLostExit(f"broker {config.zone}#{config.suffix} lost its Etcd lease; "
                            "it persisted its spools and stopped (restart it to rejoin)")
    await broker.stop()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if args else 2
    if args[0] == "consumer":
        from gazette_core.consumer.main import main as consumer_main  # consumers only
        return consumer_main(args[1:])
    if args[0] != "serve":
        print(f"gazette: unknown command {args[0]!r}\n{USAGE}", file=sys.stderr)
        return 2
    config = parse_args(args[1:])
    return run_process("gazette", config.log_level, serve(config))


if __name__ == "__main__":
    sys.exit(main())
