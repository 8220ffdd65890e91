"""`gazctl journals suspend`: let idle journals give up their replicas.

Each selected journal gets an empty append asking the broker to suspend it
(docs/design/append.md#suspension): a journal written within its flush interval stays active
unless `--force` is given. A suspended journal resumes on its next append.
Every journal's outcome is printed; any failure makes the command exit 1, and
a run that leaves no selected journal suspended exits 3.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import typer

from gazctl.commands.selection import matched_journals, require_selector
from gazctl.config import run
from gazctl.options import BrokerAddress, RequiredSelector, Timeout
from gazctl.render import stderr, stdout
from gazctl.usage import NothingDone
from gazette_core.broker.client.appender import append
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.suspend_ext import fully_suspended
from gazette_core.errors import AppendError, GazetteError

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

Outcome = tuple[str, str, bool]
SUSPENDED = ("suspended", "already suspended")


def suspend(
    selector: str = RequiredSelector,
    force: bool = typer.Option(False, "-f", "--force",
                               help="Suspend even journals written within their flush "
                                    "interval, persisting their local fragments first."),
    broker: str | None = BrokerAddress,
    timeout: str = Timeout,
) -> None:
    """Suspend the selected journals; they resume on their next append.

    A later `journals apply` of a spec file without each journal's `suspend`
    block resumes nothing but does overwrite the block; keep it in the file,
    or use `journals edit`, which round-trips it. Exits 3 when no selected
    journal ends up suspended.
    """
    sel = require_selector(selector)
    mode = pb.AppendRequest.SUSPEND_NOW if force else pb.AppendRequest.SUSPEND_IF_FLUSHED

    async def body(stub: JournalAsyncStub) -> list[Outcome]:
        found = await matched_journals(stub, sel, selector)
        done = [(j.spec.name, "already suspended", True) for j in found
                if fully_suspended(j.spec)]
        pending = [_suspend(stub, j.spec.name, mode) for j in found
                   if not fully_suspended(j.spec)]
        return done + list(await asyncio.gather(*pending))

    failed = suspended = 0
    for journal, outcome, ok in sorted(run(broker, body, timeout)):
        (stdout if ok else stderr).print(f"{journal}: {outcome}", highlight=False)
        failed += not ok
        suspended += outcome in SUSPENDED
    if failed:
        raise GazetteError(f"{failed} journal(s) could not be suspended")
    if not suspended:
        raise NothingDone("no journal was suspended")


async def _suspend(stub: JournalAsyncStub, journal: str, mode: int) -> Outcome:
    try:
        await append(stub, journal, b"", suspend=mode)
    except AppendError as exc:
        if exc.status == pb.SUSPENDED:
            return journal, "suspended", True
        return journal, f"not suspended: {exc}", False
    except GazetteError as exc:
        return journal, f"not suspended: {exc}", False
    return journal, "not suspended: written within its flush interval (--force suspends it)", True
