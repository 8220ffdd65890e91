"""`gazette consumer --app package.module:Attr`: run a consumer application until signalled.

SIGTERM or SIGINT stops it gracefully: primaries are handed to their hot
standbys before the process leaves. A process whose Etcd lease is lost stops
its shards and exits with EXIT_LEASE_LOST; a supervisor (e.g. `gazctl local
up`) restarts it.
"""

from __future__ import annotations

import asyncio
import importlib
import signal
import sys
from typing import Any

from gazette_core.consumer.config import ConsumerConfig, parse_args
from gazette_core.consumer.service import ConsumerService
from gazette_core.errors import GazetteError
from gazette_core.server.process import LeaseLostExit, run_process


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
    try:
        app = getattr(module, attr)
    except AttributeError:
        raise AppLoadError(f"--app {spec!r}: module {module_name!r} has no {attr!r}") from None
    if isinstance(app, type):
        app = app()
    missing = [m for m in ("new_store", "new_message", "consume_message", "finalize_txn")
               if not callable(getattr(app, m, None))]
    if missing:
        raise AppLoadError(f"--app {spec!r} is not an Application: it lacks {', '.join(missing)}")
    return app


async def serve(config: ConsumerConfig) -> None:
    """Run the consumer until a termination signal arrives or its Etcd lease is lost."""
    app = load_app(config.app)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await _serve(config, app, stop)
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)


async def _serve(config: ConsumerConfig, app: Any, stop: asyncio.Event) -> None:
    service = ConsumerService(config, app)
    await service.start()
    print(f"gazette consumer {config.zone}#{config.suffix} serving at {service.endpoint}",
          file=sys.stderr, flush=True)
    lost = asyncio.create_task(service.lease_lost.wait())
    stopping = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait([lost, stopping], return_when=asyncio.FIRST_COMPLETED)
    finally:
        lost.cancel()
        stopping.cancel()
        await service.stop()
    if service.lease_lost.is_set() and not stop.is_set():
        raise LeaseLostExit(f"consumer {config.zone}#{config.suffix} lost its Etcd lease; "
                            "it stopped its shards (restart it to rejoin)")


def main(argv: list[str]) -> int:
    """Entry point of `gazette consumer`; returns the exit status."""
    config = parse_args(argv)
    if not config.app:
        print("gazette consumer: --app (or $CONSUMER_APP) is required: package.module:Attr",
              file=sys.stderr)
        return 2
    return run_process("gazette consumer", config.log_level, serve(config))
if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
