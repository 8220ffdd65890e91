"""Where gazctl finds its broker and how it runs one command's RPCs.

The broker address comes from, in order: `--broker.address`, `$BROKER_ADDRESS`,
gazctl.ini (see `gazctl.ini`), the stack started by `gazctl local up`, then
http://localhost:8080.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

import typer

from gazctl.ini import load as load_ini
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
    return resolve_address(flag)[0]


def resolve_address(flag: str | None) -> tuple[str, str]:
    """The broker address and where it came from (for `print-config`).

    Typer fills `flag` from $BROKER_ADDRESS when the flag is absent, so the
    flag and the environment come first, then the file.
    """
    if flag:
        return flag, "flag or $BROKER_ADDRESS"
    ini = load_ini()
    if (value := ini.get("address")) is not None:
        return value, str(ini.path)
    if (active := active_broker_address()) is not None:
        return active, "the active local stack"
    return DEFAULT_ADDRESS, "default"


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
