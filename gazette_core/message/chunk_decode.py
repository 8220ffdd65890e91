"""Decoding a read chunk's records into envelopes, record by record or all at once.

`ChunkDecoder` turns the records a chunk completes into a list of Envelopes.
Messages of a StructMessage type in a JSON-lines journal are decoded a whole
chunk at a time (msgspec's `decode_lines`, in C); anything that path cannot
take as it is (a record that fails to decode, a blank line, bytes that are
not UTF-8) is decoded again record by record, which says exactly which
record is wrong and why. Every other type is decoded record by record with
one `new_message(spec)` per record.

A struct type is learnt from the first `new_message(spec)` of the read: the
messages of a StructMessage type are made by the decoder, not by
`new_message`, which is called once per read for them.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import repeat

import msgspec
import numpy as np
from google.protobuf.message import DecodeError

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import GazetteError, with_type
from gazette_core.message.framing import Framing, JSONFraming
from gazette_core.message.interfaces import Envelope, Message
from gazette_core.message.splitter import LineSplitter, Splitter
from gazette_core.message.structs import StructMessage, decoder

NewMessage = Callable[[pb.JournalSpec], Message]


class MessageDecodeError(GazetteError):
    """A record could not be decoded (or ended early) at a journal offset."""


class NewMessageError(GazetteError):
    """The caller's `new_message` raised, for the record at a journal offset."""


def new_message_at(new_message: NewMessage, spec: pb.JournalSpec, offset: int) -> Message:
    """`new_message(spec)`; what it raises, of any kind, as a NewMessageError.

    It is the caller's (an application's) code, called without awaiting: no
    exception out of it, SystemExit included, is a cancellation of the reader.
    """
    try:
        return new_message(spec)
    except BaseException as err:
        raise NewMessageError(f"new_message at {spec.name}:{offset}: {with_type(err)}") from err


Decoded = tuple[list[Envelope], Exception | None]


class ChunkDecoder:
    """Envelopes of the records each chunk completes, for one read of one journal."""

    def __init__(self, framing: Framing, spec: pb.JournalSpec, new_message: NewMessage,
                 keep_records: bool) -> None:
        self._framing = framing
        self._spec = spec
        self._journal = spec.name
        self._new_message = new_message
        self._keep = keep_records
        self._struct: type | None = None
        self._learnt = not isinstance(framing, JSONFraming)  # Only JSON lines decode in bulk.

    def decode(self, splitter: Splitter, chunk: bytes) -> Decoded:
        """The envelopes of the records `chunk` completes, and the error that stopped them
        (raise it after handing out the envelopes before it)."""
        if self._struct is not None and isinstance(splitter, LineSplitter):
            at, block = splitter.feed_block(chunk)
            return self._bulk(at, block)
        return self._one_by_one(splitter.feed_spans(chunk))

    def _bulk(self, at: int, block: bytes) -> Decoded:
        if not block:
            return [], None
        ends = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10)
        ends += at + 1
        try:
            if not block.isascii():
                block.decode("utf-8")  # msgspec does not look into the values of unknown keys
            msgs = decoder(self._struct).decode_lines(block)  # type: ignore[arg-type]
        except (msgspec.MsgspecError, ValueError):
            msgs = []
        if len(msgs) != len(ends):  # An error, or blank lines decode_lines passed over.
            return self._one_by_one(self._spans(at, block))
        end_list = ends.tolist()
        begins = [at, *end_list[:-1]]
        if self._keep:
            records = [block[b - at:e - at] for b, e in zip(begins, end_list, strict=True)]
            return list(map(Envelope, repeat(self._journal), begins, end_list, msgs,
                            records)), None
        return list(map(Envelope, repeat(self._journal), begins, end_list, msgs)), None

    @staticmethod
    def _spans(at: int, block: bytes) -> list[tuple[int, bytes]]:
        lines = block.split(b"\n")[:-1]
        spans = []
        for line in lines:
            spans.append((at, line + b"\n"))
            at += len(line) + 1
        return spans

    def _one_by_one(self, spans: list[tuple[int, bytes]]) -> Decoded:
        out: list[Envelope] = []
        journal, framing = self._journal, self._framing
        for begin, record in spans:
            try:
                msg = self._message(begin)
                msg = framing.unmarshal(record, msg)
            except NewMessageError as err:
                return out, err
            except (ValueError, TypeError, DecodeError) as err:
                return out, _caused(MessageDecodeError(
                    f"{journal} offset {begin}: cannot decode message: {err}"), err)
            except Exception as err:  # a message type's own decoding, failing otherwise
                return out, _caused(MessageDecodeError(
                    f"{journal} offset {begin}: cannot decode message: {with_type(err)}"), err)
            out.append(Envelope(journal, begin, begin + len(record), msg,
                                record if self._keep else b""))
        return out, None

    def _message(self, offset: int) -> Message:
        if self._struct is not None:
            return self._struct()  # type: ignore[no-any-return]
        msg = new_message_at(self._new_message, self._spec, offset)
        if not self._learnt:
            # The first message says the type; a struct type is decoded in bulk from now on.
            self._learnt = True
            if isinstance(msg, StructMessage):
                self._struct = type(msg)
        return msg


def _caused(err: Exception, cause: Exception) -> Exception:
    err.__cause__ = cause
    return err
