"""`gazette serve|consumer`: the `gazette` command, which runs a broker or a consumer.

It sits above both halves, so neither imports the other: `broker.main` runs
a broker, `consumer.main` a consumer application, and only the one asked
for is loaded.
"""

from __future__ import annotations

# isort: off
from gazette_core.server import quiet_grpc  # noqa: F401  (first: before gRPC loads)
# isort: on
import sys

USAGE = ("usage: gazette serve [flags]       run a broker (gazette serve --help lists flags)\n"
         "       gazette consumer [flags]    run a consumer application "
         "(gazette consumer --help)")


def main(argv: list[str] | None = None) -> int:
    """Entry point of `gazette`; returns the exit status."""
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
    from gazette_core.broker.main import main as broker_main  # brokers only
    return broker_main(args[1:])


if __name__ == "__main__":
    sys.exit(main())
