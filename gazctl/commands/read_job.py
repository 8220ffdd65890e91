"""The run of one `gazctl journals read`: its journals, read once or followed (-b).

`Job.run` is what journals_read.py hands to `config.run` once the command
line was checked: it picks the reader of each journal (raw content, or
committed messages) and reads the journals the selector matches now, or
follows the selector.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gazctl import logs
from gazctl.commands.read_committed import CommittedReader, new_message_of
from gazctl.commands.read_watch import Output, ReadOne, follow, raw_reader
from gazctl.commands.selection import matched_journals
from gazctl.routes import journal_client, learn
from gazette_core.broker.client.journals import fetch_write_head, list_journals
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.suspend_ext import fully_suspended

if TYPE_CHECKING:
    from google.protobuf.message import Message as ProtoBuf

    from gazette_core.broker.client.routing import JournalClient
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub


@dataclass
class Job:
    """One `journals read`: what to read, from where, and how."""

    sel: pb.LabelSelector
    text: str  # the selector as given, for messages
    out: Output
    starts: dict[str, int]
    committed: bool
    proto: type[ProtoBuf] | None
    file_root: str | None
    template: pb.ReadRequest
    finals: dict[str, int] = field(default_factory=dict)  # where each journal's read stopped

    async def run(self, stub: JournalAsyncStub) -> None:
        # Reads that fetch fragments themselves may not be proxied, so they go to a
        # member of each journal's route, which a Router learns from the brokers.
        client = journal_client(stub, needed=self.file_root is not None)
        read: ReadOne = (CommittedReader(stub, client, self.out, self.finals, self.file_root,
                                         self.proto) if self.committed
                         else raw_reader(client, self.out, self.finals, self.file_root))
        if self.template.block:
            if self.starts:
                listed = (await list_journals(stub, self.sel)).journals
                await warn_past_heads(stub, [j.spec.name for j in listed
                                             if not fully_suspended(j.spec)], self.starts)
            await follow(stub, self.sel, self.text, self.out, self.template, self.starts,
                         self.finals, read)
        else:
            await self._read_once(stub, client, read)

    async def _read_once(self, stub: JournalAsyncStub, client: JournalClient,
                         read: ReadOne) -> None:
        """Read each journal the selector matches now up to its write head (or --count)."""
        listed = await matched_journals(stub, self.sel, self.text)
        learn(client, listed)
        specs = [j.spec for j in listed if not fully_suspended(j.spec)]
        if self.committed:  # A journal without a framing fails before anything is printed.
            for spec in specs:
                new_message_of(spec, self.proto)
        await warn_past_heads(stub, [s.name for s in specs], self.starts)
        readers = []
        for spec in specs:
            req = pb.ReadRequest()
            req.CopyFrom(self.template)
            req.journal, req.offset = spec.name, self.starts.get(spec.name, self.template.offset)
            readers.append(asyncio.ensure_future(read(req, spec)))
        everyone = asyncio.gather(*readers, return_exceptions=True)
        enough = asyncio.ensure_future(self.out.done.wait())  # --count records were written
        try:
            waiters: list[asyncio.Future[Any]] = [enough, everyone]
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            enough.cancel()
            for reader in readers:
                reader.cancel()
            results = await everyone
        failures = [r for r in results if isinstance(r, BaseException)
                    and not isinstance(r, asyncio.CancelledError)]
        if failures:
            raise failures[0]


async def warn_past_heads(stub: JournalAsyncStub, names: list[str],
                          starts: dict[str, int]) -> None:
    """Say on stderr which journals an `--offsets` file starts past their write head.

    Nothing of such a journal is read until it grows past that offset; the usual
    cause is an offsets file of another cluster, or of a journal deleted and
    created again.
    """
    ahead = [name for name in names if starts.get(name, 0) > 0]
    heads = await asyncio.gather(*(fetch_write_head(stub, name) for name in ahead))
    for name, head in zip(ahead, heads, strict=True):
        if starts[name] > head:
            logs.warn(f"{name} starts at offset {starts[name]}, past its write head {head}; "
                      f"nothing is read from it until it grows past {starts[name]}")
