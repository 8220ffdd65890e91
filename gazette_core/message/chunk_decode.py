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
from gazette_core.message.interfaces import Envelope, Message, text_uuid_type
from gazette_core.message.splitter import LineSplitter, Splitter
from gazette_core.message.structs import StructMessage, decoder
from gazette_core.message.uuid_batch import EnvelopeBatch, uuid_fields

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
        self._first: Message | None = None
        self._text_uuid = False  # Whether the struct's `uuid` field is its UUID text.
        self._learnt = not isinstance(framing, JSONFraming)  # Only JSON lines decode in bulk.

    def decode(self, splitter: Splitter, chunk: bytes) -> Decoded:
        """The envelopes of the records `chunk` completes, and the error that stopped them
        (raise it after handing out the envelopes before it)."""
        if not self._learnt and isinstance(splitter, LineSplitter) and b"\n" in chunk:
            # The chunk completes a record, which begins where the splitter stands.
            try:
                self._first = self._message(splitter.position)
            except NewMessageError as err:
                return [], err
        if self._struct is not None and isinstance(splitter, LineSplitter):
            at, block = splitter.feed_block(chunk)
            return self._bulk(at, block)
        return self._one_by_one(splitter.feed_spans(chunk))

    def _bulk(self, at: int, block: bytes) -> Decoded:
        if not block:
            return [], None
        chars = np.frombuffer(block, dtype=np.uint8)
        newlines = np.flatnonzero(chars == 10)
        starts = np.concatenate(([0], newlines[:-1] + 1))
        msgs = self._decode_lines(block, chars, starts, newlines)
        if msgs is None:
            return self._one_by_one(self._spans(at, block))
        end_list = (newlines + (at + 1)).tolist()
        begins = [at, *end_list[:-1]]
        uuids = uuid_fields(msgs) if self._text_uuid else None
        if self._keep:
            records = [block[b - at:e - at] for b, e in zip(begins, end_list, strict=True)]
            return EnvelopeBatch(map(Envelope, repeat(self._journal), begins, end_list, msgs,
                                     records), uuids), None
        return EnvelopeBatch(map(Envelope, repeat(self._journal), begins, end_list, msgs),
                             uuids), None

    def _decode_lines(self, block: bytes, chars: np.ndarray, starts: np.ndarray,
                      newlines: np.ndarray) -> list[Message] | None:
        """One struct per line of `block`, decoded at once; None unless each line is known
        to be decoded exactly as on its own.

        decode_lines reads a stream of documents, whatever the lines: it is taken
        only when every line opens with `{` and closes with `}` (no line blank, no
        document spread over lines, hence one per line when the counts agree).
        """
        if not ((chars[starts] == ord("{")).all() and (chars[newlines - 1] == ord("}")).all()):
            return None
        try:
            if not block.isascii():
                block.decode("utf-8")  # msgspec does not look into the values of unknown keys
            msgs: list[Message] = decoder(self._struct).decode_lines(block)  # type: ignore
        except (msgspec.MsgspecError, ValueError):
            return None
        return msgs if len(msgs) == len(newlines) else None

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
        if self._first is not None:  # Made to learn the type, for the first record.
            msg, self._first = self._first, None
            return msg
        msg = new_message_at(self._new_message, self._spec, offset)
        if not self._learnt:
            # The first message says the type; a struct type is decoded in bulk from now on.
            self._learnt = True
            if isinstance(msg, StructMessage):
                self._struct = type(msg)
                self._text_uuid = text_uuid_type(self._struct)
        return msg


def _caused(err: Exception, cause: Exception) -> Exception:
    err.__cause__ = cause
    return err
