"""`gazctl journals reset-head` and `store-health`: recovery and store checks.

reset-head lets brokers take appends again after every replica of a journal
lost its spool (they answer INDEX_HAS_GREATER_OFFSET): it reads the highest
offset of the fragment index and sends an empty append at exactly that
offset, which moves the write head there. Doing so on a healthy journal
changes nothing. Unlike Go's, a journal that fails makes the command exit 1.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import grpc
import typer

from gazctl.commands.selection import matched_journals, require_selector
from gazctl.config import run
from gazctl.options import BrokerAddress, RequiredSelector, Timeout
from gazctl.render import JournalProgress, journal_progress, stderr, stdout
from gazctl.usage import UsageError
from gazette_core.broker.client.appender import append
from gazette_core.broker.client.journals import fetch_write_head
from gazette_core.broker.client.rpc_errors import from_rpc_error
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.suspend_ext import fully_suspended
from gazette_core.broker.protocol.validate_ext import validate_fragment_store_health_request
from gazette_core.errors import AppendError, GazetteError, StatusError, ValidationError

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

def reset_head(selector: str = RequiredSelector, broker: str | None = BrokerAddress,
               timeout: str = Timeout) -> None:
    """Move each selected journal's write head to the end of its fragment index."""
    sel = require_selector(selector)

    async def body(stub: JournalAsyncStub,
                   progress: JournalProgress) -> list[tuple[str, str, bool]]:
        journals = [j for j in await matched_journals(stub, sel, selector)
                    if not fully_suspended(j.spec)]
        progress.start(len(journals))

        async def one(name: str) -> tuple[str, str, bool]:
            # The resets run in parallel: count each as it finishes, in whatever order.
            result = await _reset(stub, name)
            progress.advance()
            return result

        return list(await asyncio.gather(*(one(j.spec.name) for j in journals)))

    # Transient: the bar is erased before the per-journal lines below are printed.
    with journal_progress("Resetting write heads") as progress:
        results = run(broker, lambda stub: body(stub, progress), timeout)
    failed = 0
    for journal, outcome, ok in results:
        (stdout if ok else stderr).print(f"{journal}: {outcome}", highlight=False)
        failed += not ok
    if failed:
        raise GazetteError(f"{failed} journal(s) could not be reset")


async def _reset(stub: JournalAsyncStub, journal: str) -> tuple[str, str, bool]:
    try:
        head = await fetch_write_head(stub, journal)
        # SUSPEND_KEEP: a partially suspended journal stays suspended.
        await append(stub, journal, b"", offset=head, suspend=pb.AppendRequest.SUSPEND_KEEP)
    except AppendError as exc:
        if exc.status == pb.WRONG_APPEND_OFFSET:
            return journal, "not reset: appends raced the reset (it is writable)", True
        return journal, f"not reset: {exc}", False
    except (StatusError, GazetteError) as exc:
        return journal, f"not reset: {exc}", False
    return journal, f"write head at {head}", True


def store_health(
    store: str = typer.Argument(..., help="Fragment store URL, e.g. s3://bucket/prefix/."),
    check_delete_prefix: str | None = typer.Option(
        None, "--check-delete-prefix",
        help="Also write and delete a probe object under this prefix (ending in /; "
             "empty for the store root)."),
    broker: str | None = BrokerAddress,
    timeout: str = Timeout,
) -> None:
    """Check a fragment store through a broker, with the broker's own credentials."""
    req = pb.FragmentStoreHealthRequest(fragment_store=store,
                                        check_delete=check_delete_prefix is not None,
                                        check_delete_prefix=check_delete_prefix or "")
    _check_health_request(req)

    async def body(stub: JournalAsyncStub) -> pb.FragmentStoreHealthResponse:
        try:
            resp: pb.FragmentStoreHealthResponse = await stub.FragmentStoreHealth(req, timeout=60)
        except grpc.aio.AioRpcError as err:
            raise from_rpc_error(err, "FragmentStoreHealth") from err
        return resp

    resp = run(broker, body, timeout)
    if resp.status == pb.OK:
        stdout.print(f"Fragment store {store} is healthy", highlight=False)
        return
    detail = f": {resp.store_health_error}" if resp.store_health_error else ""
    raise GazetteError(f"fragment store {store} is not healthy "
                       f"({pb.Status.Name(resp.status)}){detail}")


def _check_health_request(req: pb.FragmentStoreHealthRequest) -> None:
    """Check the request as brokers do, so that a bad argument is a usage error sent nowhere."""
    try:
        validate_fragment_store_health_request(req)
    except ValidationError as exc:
        flag = "--check-delete-prefix" if exc.path == "check_delete_prefix" else "STORE"
        raise UsageError(flag, exc.reason) from None
