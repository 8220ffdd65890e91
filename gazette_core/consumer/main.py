"""`gazette consumer --app package.module:Attr`: run a consumer application until signalled.

SIGTERM or SIGINT stops it gracefully: primaries are handed to their hot
standbys before the process leaves. A process whose Etcd lease is lost stops
its shards and exits with EXIT_LEASE_LOST; a supervisor (e.g. `gazctl local
up`) restarts it.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from gazette_core.consumer.config import ConsumerConfig, parse_args
from gazette_core.consumer.service import ConsumerService
from gazette_core.errors import GazetteError, with_type
from gazette_core.server.process import run_process, serve_until_stopped


class AppLoadError(GazetteError):
    """`--app` does not name an importable application."""


def load_app(spec: str) -> Any:
    """The application named `package.module:Attr`; a class is instantiated without arguments."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise AppLoadError(f"--app {spec!r}: expected package.module:Attr")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise AppLoadError(f"--app {spec!r}: cannot import {module_name!r}: {exc}") from None
    except BaseException as exc:  # the module's own code failed (SyntaxError, SystemExit...)
        raise AppLoadError(f"--app {spec!r}: importing {module_name!r} failed: "
                           f"{with_type(exc)}") from None
    try:
        app = getattr(module, attr)
    except AttributeError:
        raise AppLoadError(f"--app {spec!r}: module {module_name!r} has no {attr!r}") from None
    if isinstance(app, type):
        try:
            app = app()
        except BaseException as exc:
            raise AppLoadError(f"--app {spec!r}: {attr}() failed: {with_type(exc)} (an "
                               "application class is created without arguments)") from None
    missing = [m for m in ("new_store", "new_message", "consume_message", "finalize_txn")
               if not callable(getattr(app, m, None))]
    if missing:
        raise AppLoadError(f"--app {spec!r} is not an Application: it lacks {', '.join(missing)}")
    return app


async def serve(config: ConsumerConfig) -> None:
    """Run the consumer until a termination signal arrives or its Etcd lease is lost."""
    name = f"consumer {config.zone}#{config.suffix}"
    await serve_until_stopped(ConsumerService(config, load_app(config.app)),
                              f"gazette {name}", f"{name} lost its Etcd lease; it stopped "
                              "its shards (restart it to rejoin)")


def main(argv: list[str]) -> int:
    """Entry point of `gazette consumer`; returns the exit status."""
    config = parse_args(argv)
    if not config.app:
        print("gazette consumer: --app (or $CONSUMER_APP) is required: package.module:Attr",
              file=sys.stderr)
        return 2
    return run_process("gazette consumer", config.log_level, serve(config), config.log_format)
if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
