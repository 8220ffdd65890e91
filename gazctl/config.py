"""Where gazctl finds its broker: flag, then environment, then the active local stack."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import TypeVar

import grpc
import typer

from gazette_core.broker.client.channel import dial
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.errors import GazetteError, UnavailableError
from gazette_core.local.stack import active_broker_address

DEFAULT_ADDRESS = "http://localhost:8080"
T = TypeVar("T")

BrokerAddress = typer.Option(
    None, "--broker.address", envvar="BROKER_ADDRESS", show_envvar=True,
    help="Broker endpoint URL. Defaults to the stack started by `gazctl local up`, "
         "else http://localhost:8080.")
Selector = typer.Option("", "-l", "--selector",
                        help="Label selector, e.g. 'app=clicks, name:prefix=acme/'.")


def broker_address(flag: str | None) -> str:
    return flag or active_broker_address() or DEFAULT_ADDRESS


def run(address: str | None, body: Callable[[pb_grpc.JournalStub], Awaitable[T]]) -> T:
    """Run `body` with a Journal stub, turning transport failures into clear errors."""
    target = broker_address(address)

    async def main() -> T:
        channel = dial(target)
        try:
            return await body(pb_grpc.JournalStub(channel))
        except grpc.aio.AioRpcError as exc:
            raise _rpc_error(exc, target) from None
        finally:
            await channel.close()

    return asyncio.run(main())


def _rpc_error(exc: grpc.aio.AioRpcError, target: str) -> GazetteError:
    if exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        err = UnavailableError(f"cannot reach broker at {target}: {exc.details()}")
        err.hint = "start one with `gazctl local up` or set --broker.address"
        return err
    return GazetteError(f"broker at {target} failed the request: {exc.details()}")


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").lower() in ("1", "true", "yes")
