"""The `text/csv` framing: RFC 4180 rows whose column 0 is the message UUID."""

from __future__ import annotations

import csv
import io
import threading
from typing import Any

from gazette_core.message.interfaces import CSVRecord, Message
from gazette_core.message.splitter import CSVSplitter, Splitter
from gazette_core.message.uuid import parse_text


class _Line:
    """A file for csv.writer that keeps the one row it was last given."""

    __slots__ = ("text",)

    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> int:
        self.text = text
        return len(text)


class _Writers(threading.local):
    """A row writer per thread: made once rather than with a buffer per record."""

    def __init__(self) -> None:
        self.line = _Line()
        self.writer: Any = csv.writer(self.line, lineterminator="\n")


_WRITERS = _Writers()


class CSVFraming:
    """Rows written with `\\n` line ends; `\\r\\n` is read as well."""

    content_type = "text/csv"

    def marshal(self, msg: Message) -> bytes:
        writers = _WRITERS
        writers.writer.writerow(list(msg))  # type: ignore[call-overload]
        return writers.line.text.encode()

    def unmarshal(self, record: bytes, msg: Message) -> Message:
        text = record.decode()
        if text.count("\n") == 1 and text[-1] == "\n" and "\r" not in text:
            rows = list(csv.reader((text,)))  # One line: no line splitting to do.
        else:
            rows = list(csv.reader(io.StringIO(text, newline="")))
        if len(rows) != 1:
            raise ValueError(f"CSV record holds {len(rows)} rows, not one: {record[:80]!r}")
        row = rows[0]
        try:
            if not row or not row[0]:
                raise ValueError("no UUID")
            parse_text(row[0])  # Accepts and refuses exactly what uuid.UUID does.
        except ValueError:
            raise ValueError(f"CSV record's column 0 is not a UUID: {record[:80]!r}") from None
        if not isinstance(msg, CSVRecord):
            raise TypeError(f"the text/csv framing reads into CSVRecord, not {type(msg).__name__}")
        msg[:] = row
        return msg

    def splitter(self) -> Splitter:
        return CSVSplitter()
