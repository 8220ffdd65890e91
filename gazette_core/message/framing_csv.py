"""The `text/csv` framing: RFC 4180 rows whose column 0 is the message UUID."""

from __future__ import annotations

import csv
import io
import uuid

from gazette_core.message.interfaces import CSVRecord, Message
from gazette_core.message.splitter import CSVSplitter, Splitter


class CSVFraming:
    """Rows written with `\\n` line ends; `\\r\\n` is read as well."""

    content_type = "text/csv"

    def marshal(self, msg: Message) -> bytes:
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerow(list(msg))  # type: ignore[call-overload]
        return out.getvalue().encode()

    def unmarshal(self, record: bytes, msg: Message) -> Message:
        rows = list(csv.reader(io.StringIO(record.decode(), newline="")))
        if len(rows) != 1:
            raise ValueError(f"CSV record holds {len(rows)} rows, not one: {record[:80]!r}")
        row = rows[0]
        try:
            uuid.UUID(row[0] if row else "")
        except ValueError:
            raise ValueError(f"CSV record's column 0 is not a UUID: {record[:80]!r}") from None
        if not isinstance(msg, CSVRecord):
            raise TypeError(f"the text/csv framing reads into CSVRecord, not {type(msg).__name__}")
        msg[:] = row
        return msg

    def splitter(self) -> Splitter:
        return CSVSplitter()
