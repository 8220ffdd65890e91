"""The Application a consumer runs, and how the framework calls it.

See docs/design/consumer.md#the-application.

Every method may be a plain function or a coroutine function: `call` awaits
whatever comes back when it is awaitable, so one app can mix both styles.
`new_message` runs on the read path once per record, where nothing can be
awaited: an `async def new_message` is run to completion on the spot
(`message_factory`), so it must not actually wait for anything.

Whatever an app method raises fails only its shard, never the process:
`call` turns every exception (SystemExit,
KeyboardInterrupt and a CancelledError of the app's own included) into an
AppError that names the method (and, given one, where it was, such as the
message's journal and offset) and the exception's type. Only a cancellation
of the calling task itself goes through as it is: that is the framework
stopping the shard.
"""

from __future__ import annotations

import asyncio
import inspect
import types
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from gazette_core.errors import GazetteError, with_type

if TYPE_CHECKING:
    from gazette_core.broker.protocol import protocol_pb2 as pb
    from gazette_core.consumer.recoverylog.recorder import Recorder
    from gazette_core.consumer.shard import Shard
    from gazette_core.consumer.store.interface import Store

T = TypeVar("T")


class DeferToNextTransaction(Exception):
    """Raised by consume_message: end this transaction and offer the message again next.

    Raising it for the first message of a transaction is an error, because the
    next transaction would start with the very same message.
    """


class Application(Protocol):
    """What a consumer app implements; each method may be sync or async."""

    def new_store(self, shard: Shard, recorder: Recorder | None) -> Any:
        """The shard's Store (or an awaitable of it); `recorder` is None without a log."""

    def new_message(self, spec: pb.JournalSpec) -> Any:
        """A fresh, empty message for a record of journal `spec` (must not wait)."""

    def consume_message(self, shard: Shard, store: Store, envelope: Any, publisher: Any) -> Any:
        """Apply one committed message to the store; ACK envelopes arrive here too."""

    def finalize_txn(self, shard: Shard, store: Store, publisher: Any) -> Any:
        """The transaction is about to commit: flush caches, publish what is pending."""


@runtime_checkable
class BeginFinisher(Protocol):
    """Optional hooks around each transaction."""

    def begin_txn(self, shard: Shard, store: Store) -> Any: ...

    def finished_txn(self, shard: Shard, store: Store,
                     commit: Awaitable[None] | BaseException) -> Any: ...


@dataclass
class InitArgs:
    """Given to an app's optional `init_application` to register gRPC services or routes."""

    config: Any
    server: Any  # the consumer's grpc.aio.Server
    service: Any  # the ConsumerService
    http_routes: list[Any] = field(default_factory=list)  # aiohttp RouteDefs to add


class AppError(GazetteError):
    """An application method raised: `method`, `where` (if known) and the exception's type."""

    def __init__(self, method: str, err: BaseException | str, where: str = "") -> None:
        self.method, self.where = method, where
        at = f" at {where}" if where else ""
        super().__init__(f"{method}{at}: {err if isinstance(err, str) else with_type(err)}")


def ours(err: BaseException) -> bool:
    """Whether `err` is a cancellation of the running task, not something an app raised.

    An app may raise CancelledError itself, or let one out of a future it
    awaited that someone else cancelled; neither cancels our task.
    """
    if not isinstance(err, asyncio.CancelledError):
        return False
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _name(fn: Callable[..., Any]) -> str:
    return str(getattr(fn, "__name__", "") or "the application")


async def call(fn: Callable[..., Any], *args: Any, where: str = "", name: str = "") -> Any:
    """Call `fn(*args)`, awaiting the result when `fn` is async.

    What it raises comes out as an AppError (see the module docstring) naming
    the method (`name`, else `fn`'s own), except DeferToNextTransaction, a
    request rather than a failure.
    """
    try:
        result = fn(*args)
        if inspect.isawaitable(result):
            return await result
        return result
    except BaseException as err:
        failure = app_failure(fn, err, where, name)
        if failure is None:
            raise
        raise failure from err


def app_failure(fn: Callable[..., Any], err: BaseException, where: str = "",
                name: str = "") -> AppError | None:
    """The AppError that `call` raises for `err` out of `fn`; None for what goes through as
    it is (DeferToNextTransaction, a cancellation of the running task)."""
    if isinstance(err, DeferToNextTransaction) or ours(err):
        return None
    return AppError(name or _name(fn), err, where)


async def guarded(method: str, awaitable: Awaitable[T]) -> T:
    """Await what an app method returned (a store's commit, say) as `call` does.

    A GeneratorExit is the app's only while the task that runs this await
    raises it: one arriving elsewhere is this coroutine being closed (its
    abandoned task collected), which must go through for the close to succeed.
    """
    runner = asyncio.current_task()
    try:
        return await awaitable
    except BaseException as err:
        if ours(err) or (isinstance(err, GeneratorExit) and _running_task() is not runner):
            raise
        raise AppError(method, err) from err


def _running_task() -> asyncio.Task[Any] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:  # no event loop runs here: a finalizer
        return None


async def call_optional(app: object, name: str, *args: Any) -> Any:
    """Call the optional method `name` of `app` if it has one; None otherwise."""
    method = getattr(app, name, None)
    if method is None:
        return None
    return await call(method, *args)


def message_factory(app: Any) -> Callable[[pb.JournalSpec], Any]:
    """`app.new_message` as a plain function, whether it was written sync or async.

    The reader that calls it reports what it raises with the record's journal and offset.
    """
    new_message = app.new_message
    plain: set[type] = set()  # types of results known not to be awaitable

    def make(spec: pb.JournalSpec) -> Any:
        result = new_message(spec)
        kind = type(result)
        if kind in plain:  # runs once per record: skip the slower awaitable check
            return result
        if inspect.isawaitable(result):
            return _run_now(result)
        if kind is not types.GeneratorType:  # whether a generator awaits is per object
            plain.add(kind)
        return result

    return make


def _run_now(awaitable: Awaitable[T]) -> T:
    """The result of an awaitable that completes without suspending."""
    steps = awaitable.__await__()
    try:
        steps.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    close = getattr(steps, "close", None)
    if close is not None:
        close()
    raise TypeError("new_message must not wait for anything: it runs for every record read")
