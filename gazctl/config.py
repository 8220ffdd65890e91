"""Where gazctl finds its broker (flag, environment, then the active local stack) and how
it runs one command's RPCs."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

import typer

from gazette_core.broker.client.channel import close_channels, journal_stub
from gazette_core.errors import UnavailableError
from gazette_core.local.stack import active_broker_address

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

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


def run(address: str | None, body: Callable[[JournalAsyncStub], Awaitable[T]]) -> T:
    """Run `body` with a Journal stub; an unreachable broker becomes a clear error."""
    target = broker_address(address)

    async def main() -> T:
        try:
            return await body(journal_stub(target))
        except UnavailableError as exc:
            err = UnavailableError(f"cannot reach broker at {target}: {exc}")
            err.hint = "start one with `gazctl local up` or set --broker.address"
            raise err from None
        finally:
            await close_channels()

    return asyncio.run(main())
