"""Where gazctl finds its broker and how it runs one command's RPCs.

The broker address comes from, in order: `--broker.address`, `$BROKER_ADDRESS`,
gazctl.ini (see `gazctl.ini`), the active local stack (the most recently
started one that runs, else the default one if it runs; see
`gazette_core.local.stack`), then http://localhost:8080, which failing says
that no stack runs.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from gazctl.connection import UNAUTHENTICATED_HINT, client_config
from gazctl.endpoints import connects, pick_live
from gazctl.ini import load as load_ini
from gazctl.interrupts import run as run_interruptible
from gazctl.timeflags import parse_duration
from gazctl.usage import UsageError
from gazette_core.broker.client.channel import (
    close_channels,
    endpoint_problem,
    journal_stub,
    split_addresses,
    use_client_config,
)
from gazette_core.errors import RPCError, UnavailableError
from gazette_core.local.stack import active_broker_address

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

DEFAULT_ADDRESS = "http://localhost:8080"
# When no address is set anywhere and no local stack runs, gazctl tries Go's default.
NO_STACK_HINT = ("no address is set and no local stack is running: start one with "
                 "`gazctl local up`, or set --broker.address")
T = TypeVar("T")
log = logging.getLogger("gazctl")


def broker_address(flag: str | None) -> str:
    """The first endpoint of the broker address (which may list several)."""
    return broker_addresses(flag)[0]


def broker_addresses(flag: str | None) -> list[str]:
    """Every endpoint of the broker address, in order (see `gazctl.endpoints`)."""
    return endpoints_of("--broker.address", *resolve_address(flag))


def endpoints_of(option: str, text: str, source: str = "") -> list[str]:
    """The endpoints of an address `option` (or the file `source`) gave, at least one.

    Each is checked here, before anything is dialed, so a malformed one is a
    usage error naming `option` (a consumer's address is not a broker's).
    """
    if source.endswith(".ini"):
        option = f"{option} (from {source})"
    if not (targets := split_addresses(text)):
        raise UsageError(option, f"expected an endpoint URL, got {text!r}")
    for target in targets:
        if (problem := endpoint_problem(target)) is not None:
            raise UsageError(option, f"{target!r} is not an endpoint URL: {problem}")
    return targets


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


def run(address: str | None, body: Callable[[JournalAsyncStub], Awaitable[T]],
        timeout: str = "10s") -> T:
    """Run `body` with a Journal stub; an unreachable broker becomes a clear error.

    A broker must accept a connection within `timeout`, so a wrong address
    or a broker that never answers fails fast instead of hanging (Go's gazctl
    waits for ever). Of several addresses the first live one is used
    (`gazctl.endpoints`). Once connected, `body` takes as long as its work does.
    """
    text, source = resolve_address(address)
    targets = endpoints_of("--broker.address", text, source)
    limit = connect_timeout(timeout)
    config = client_config()  # TLS files and authorization (gazctl.connection)

    async def main() -> T:
        use_client_config(config)  # for every dial below, routed calls included
        try:
            try:
                target = await pick_live(targets, limit)
            except TimeoutError:
                raise _unreachable(", ".join(targets), f"no connection within {limit:g}s",
                                   source) from None
            log.debug("using broker at %s", target)
            try:
                return await body(journal_stub(target))
            except UnavailableError as exc:
                if await connects(target, limit):
                    raise  # the broker's own answer, e.g. that it cannot reach Etcd
                raise _unreachable(target, str(exc), source) from None
            except RPCError as exc:
                if exc.code == "UNAUTHENTICATED":
                    exc.hint = UNAUTHENTICATED_HINT
                raise
        finally:
            await close_channels()

    return run_interruptible(main())


def connect_timeout(text: str) -> float:
    """Seconds from a `--timeout` duration; it must be positive."""
    return parse_duration(text, "--timeout", positive=True)


def _unreachable(target: str, reason: str, source: str) -> UnavailableError:
    err = UnavailableError(f"cannot reach broker at {target}: {reason}")
    err.hint = "start one with `gazctl local up`, set --broker.address, or raise --timeout"
    if source == "default":
        err.hint = NO_STACK_HINT
    if target.startswith("https://"):  # a refused handshake looks like an unreachable broker
        err.hint = ("check --broker.trusted-ca-file, --broker.cert-file and "
                    "--broker.cert-key-file, set --broker.address, or raise --timeout")
    return err
