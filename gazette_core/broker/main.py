"""`gazette serve`: run a broker until SIGTERM or SIGINT, then persist and exit.

A broker whose Etcd lease is lost persists its spools too and exits with
EXIT_LEASE_LOST; a supervisor (e.g. `gazctl local up`) restarts it. The
`gazette` command (`gazette_core.__main__`) runs `main` for `serve`; `gazctl
local up` runs this module itself, with the flags alone.
"""

from __future__ import annotations

# isort: off
from gazette_core.server import quiet_grpc  # noqa: F401  (first: before gRPC loads)
# isort: on
import sys

from gazette_core.broker.config import BrokerConfig, parse_args
from gazette_core.broker.service import Broker
from gazette_core.server.process import run_process, serve_until_stopped


async def serve(config: BrokerConfig) -> None:
    """Run a broker until a termination signal arrives or its Etcd lease is lost.

    A broker that lost its lease refuses appends at once (its journals may be
    someone else's by now), persists its spools as it stops, and exits 75.
    """
    name = f"broker {config.zone}#{config.suffix}"
    await serve_until_stopped(Broker(config), f"gazette {name}",
                              f"{name} lost its Etcd lease; it persisted its spools and "
                              "stopped (restart it to rejoin)")


def main(argv: list[str]) -> int:
    """Entry point of `gazette serve`; returns the exit status."""
    config = parse_args(argv)
    return run_process("gazette", config.log_level, serve(config), config.log_format)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
