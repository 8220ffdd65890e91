"""Where `gazctl shards` commands find their consumer, and how they run one command's RPCs.

The consumer address comes from, in order: `--consumer.address`,
`$CONSUMER_ADDRESS`, gazctl.ini (`[shards.Consumer] Address`), the first live
consumer of the active local stack (as for brokers, see `gazctl.config`),
then http://localhost:8080 (Go's default). Like the broker address it may list
several endpoints, the first live one being used. Commands that also need
brokers (`list --lag`, `apply` and `edit` check the journals shards name)
take `--broker.address` too and get a Journal stub beside the Shard stub.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from gazctl.config import (
    DEFAULT_ADDRESS,
    NO_STACK_HINT,
    connect_timeout,
    endpoints_of,
    resolve_address,
)
from gazctl.connection import UNAUTHENTICATED_HINT, client_config
from gazctl.endpoints import connects, pick_live
from gazctl.ini import load as load_ini
from gazctl.interrupts import run as run_interruptible
from gazette_core.broker.client.channel import (
    close_channels,
    journal_stub,
    use_client_config,
)
from gazette_core.consumer.api.client import shard_stub
from gazette_core.errors import RPCError, UnavailableError
from gazette_core.local.stack import active_consumer_address

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

T = TypeVar("T")
log = logging.getLogger("gazctl")

# When no consumer address is set anywhere and no local stack runs consumers.
NO_CONSUMERS_HINT = ("no address is set and no local stack runs consumers: start them with "
                     "`gazctl local up --consumers 1 --app MOD:ATTR`, or set --consumer.address")

ConsumerAddress = typer.Option(
    None, "--consumer.address", envvar="CONSUMER_ADDRESS", show_envvar=True,
    help="Consumer endpoint URL, or several separated by commas (the first live one is "
         "used). Defaults to the first consumer of the stack started by `gazctl local up "
         "--consumers N`, else http://localhost:8080.")


ShardSelector = typer.Option("", "-l", "--selector",
                             help="Label selector of the shards, e.g. 'id=clicks-000' or "
                                  "'app=clicks'; empty for every shard.")
RequiredShardSelector = typer.Option(..., "-l", "--selector",
                                     help="Label selector of the shards, e.g. 'id=clicks-000' "
                                          "or 'app=clicks'.")


@dataclass
class Clients:
    """The stubs of one shards command: the consumer's Shard API, and brokers when asked for."""

    shards: Any  # consumer_pb2_grpc.ShardStub
    journals: JournalAsyncStub | None = None

    def brokers(self) -> JournalAsyncStub:
        assert self.journals is not None, "the command was run without with_broker"
        return self.journals


def resolve_consumer_address(flag: str | None) -> tuple[str, str]:
    """The consumer address and where it came from (the flag includes $CONSUMER_ADDRESS)."""
    if flag:
        return flag, "flag or $CONSUMER_ADDRESS"
    ini = load_ini()
    if (value := ini.get("consumeraddress")) is not None:
        return value, str(ini.path)
    if (active := active_consumer_address()) is not None:
        return active, "the active local stack"
    return DEFAULT_ADDRESS, "default"


def run_shards(consumer: str | None, body: Callable[[Clients], Awaitable[T]],
               timeout: str = "10s", *, broker: str | None = None,
               with_broker: bool = False) -> T:
    """Run `body` with a Shard stub (and, `with_broker`, a Journal stub).

    Each side must accept a connection within `timeout`; an unreachable one
    is a clear error naming it, as in `gazctl.config.run`.
    """
    text, source = resolve_consumer_address(consumer)
    consumers = endpoints_of("--consumer.address", text, source)
    broker_text, broker_source = resolve_address(broker) if with_broker else ("", "")
    brokers = (endpoints_of("--broker.address", broker_text, broker_source) if with_broker
               else [])
    limit = connect_timeout(timeout)
    shard_config, broker_config = client_config("consumer"), client_config("broker")

    async def main() -> T:
        use_client_config(broker_config)  # brokers' routed calls included
        try:
            target = await _live("consumer", consumers, limit, source)
            clients = Clients(shard_stub(target, shard_config))
            if with_broker:
                clients.journals = journal_stub(await _live("broker", brokers, limit,
                                                            broker_source))
            try:
                return await body(clients)
            except UnavailableError as exc:
                if await connects(target, limit):
                    raise
                raise _unreachable("consumer", target, str(exc), source) from None
            except RPCError as exc:
                if exc.code == "UNAUTHENTICATED":
                    exc.hint = UNAUTHENTICATED_HINT.replace("broker", "consumer").replace(
                        "BROKER", "CONSUMER")
                raise
        finally:
            await close_channels()

    return run_interruptible(main())


async def _live(role: str, targets: list[str], limit: float, source: str = "") -> str:
    try:
        target = await pick_live(targets, limit)
    except TimeoutError:
        raise _unreachable(role, ", ".join(targets), f"no connection within {limit:g}s",
                           source) from None
    log.debug("using %s at %s", role, target)
    return target


def _unreachable(role: str, target: str, reason: str, source: str = "") -> UnavailableError:
    err = UnavailableError(f"cannot reach {role} at {target}: {reason}")
    start = ("`gazctl local up --consumers 1 --app MOD:ATTR`" if role == "consumer"
             else "`gazctl local up`")
    err.hint = f"start one with {start}, set --{role}.address, or raise --timeout"
    if source == "default":
        err.hint = NO_STACK_HINT if role == "broker" else NO_CONSUMERS_HINT
    return err
