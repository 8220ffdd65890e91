"""`gazctl journals read --committed`: journals' messages as their consumers see them.

Each journal's messages pass through the Sequencer consumers use
(gazette_core.message): a message is printed once its transaction commits,
rolled-back messages and duplicates never, and ACKs are hidden. A message is
printed as it was written (its record, in the journal's own framing), and
with --count each message is one record.

The offset kept for `--offsets-out` is where a fresh read carries on from
what was printed (CommittedSequence.resume_offset): past the last message
printed or passed over, or, while a transaction is still open, its first
message (so that a later read prints it once it commits). Messages of other
producers printed after that first message are then printed again by the
later read; a note on stderr says so.
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from typing import TYPE_CHECKING

from google.protobuf.message import Message as ProtoBuf

from gazctl import logs
from gazctl.commands.read_watch import Output
from gazctl.usage import UsageError
from gazette_core.broker.client.journals import fetch_write_head
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import ValidationError
from gazette_core.message.committed import CommittedSequence
from gazette_core.message.framing import CSV, JSON_LINES, PROTOBUF_FIXED, journal_framing
from gazette_core.message.interfaces import CSVRecord, Envelope, JSONRecord, Message, ProtoMessage
from gazette_core.message.reader import read_uncommitted

if TYPE_CHECKING:
    from gazette_core.broker.client.routing import JournalClient
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub


def load_message_type(name: str) -> type[ProtoBuf]:
    """The generated protobuf class `package.module:Class`, which must have a `uuid` field."""
    module_name, _, attr = name.partition(":")
    if not module_name or not attr:
        raise UsageError("--message-type", f"expected package.module:Class, got {name!r}")
    try:
        cls = getattr(importlib.import_module(module_name), attr)
    except ImportError as exc:
        raise UsageError("--message-type", f"cannot import {module_name!r}: {exc}") from None
    except AttributeError:
        raise UsageError("--message-type",
                         f"module {module_name!r} has no {attr!r}") from None
    if not (isinstance(cls, type) and issubclass(cls, ProtoBuf)):
        raise UsageError("--message-type", f"{name} is not a generated protobuf message class")
    field = cls.DESCRIPTOR.fields_by_name.get("uuid")
    if field is None or field.type not in (field.TYPE_STRING, field.TYPE_BYTES):
        raise UsageError("--message-type", f"{name} has no string or bytes field named uuid "
                                           "to hold the message UUID")
    return cls


class _ProtoRecord(ProtoMessage):
    __slots__ = ()

    def ParseFromString(self, data: bytes) -> None:
        super().ParseFromString(data)
        self.get_uuid()  # A malformed UUID fails here, where its offset is reported.


def new_message_of(spec: pb.JournalSpec, proto: type[ProtoBuf] | None
                   ) -> Callable[[pb.JournalSpec], Message]:
    """The messages of the journal's framing, only their UUIDs read; one error if it has none."""
    try:
        framing = journal_framing(spec)
    except ValueError as exc:
        raise ValidationError("--committed", f"{exc}; read it without --committed") from None
    if framing.content_type == JSON_LINES:
        return lambda _: JSONRecord()
    if framing.content_type == CSV:
        return lambda _: CSVRecord()
    assert framing.content_type == PROTOBUF_FIXED
    if proto is None:
        raise ValidationError("--committed", f"journal {spec.name!r} holds protobuf messages: "
                                             "name their class with --message-type "
                                             "package.module:Class")
    return lambda _: _ProtoRecord(proto())


class CommittedReader:
    """The ReadOne of --committed: one journal's committed messages into the output."""

    def __init__(self, stub: JournalAsyncStub, client: JournalClient, out: Output,
                 finals: dict[str, int], file_root: str | None,
                 proto: type[ProtoBuf] | None) -> None:
        self.stub, self.client, self.out, self.finals = stub, client, out, finals
        self.file_root, self.proto = file_root, proto

    async def __call__(self, req: pb.ReadRequest, spec: pb.JournalSpec) -> None:
        new_message = new_message_of(spec, self.proto)
        journal = req.journal
        # --tail: the head as it is now, so that the offset kept is a real one.
        start = req.offset if req.offset >= 0 else await fetch_write_head(self.stub, journal)
        self.finals[journal] = start

        def envelopes(begin: int, end: int | None = None) -> AsyncIterator[Envelope]:
            return read_uncommitted(self.client, journal, begin, new_message, end=end,
                                    block=req.block and end is None, options=req,
                                    file_root=self.file_root, keep_records=True)

        seq = CommittedSequence(envelopes(start), lambda _, begin, end: envelopes(begin, end))
        printed, last_begin = False, -1
        try:
            async with aclosing(seq.messages()) as messages:
                async for env in messages:
                    printed = False
                    if self.out.done.is_set():
                        break  # --count was met by another journal
                    self.out.write_message(env.record)
                    printed, last_begin = True, env.begin
                    if self.out.done.is_set():
                        break
        finally:
            self.finals[journal] = resume = seq.resume_offset(journal, start, printed)
            opened = seq.sequencer.earliest_open(journal)
            if opened is not None and opened == resume:
                _note_open(journal, opened, last_begin >= opened)


def _note_open(journal: str, opened: int, repeats: bool) -> None:
    """Say on stderr that the offset kept is that of a transaction still open."""
    text = (f"{journal}: a transaction begun at offset {opened} was still open where "
            "the read stopped; the offset kept for --offsets-out is that one")
    if repeats:
        text += ", so messages printed after it will be printed again by a read resuming there"
    logs.note(text)


def message_class(committed: bool, message_type: str) -> type[ProtoBuf] | None:
    """The class --message-type names (checked), or None without it."""
    if not message_type:
        return None
    if not committed:
        raise UsageError("--message-type", "names the messages of --committed reads; "
                                           "add --committed")
    return load_message_type(message_type)
