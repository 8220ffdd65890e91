"""Incremental record splitters: cut chunks of a journal's bytes into records.

A read delivers chunks that ignore record boundaries. A splitter is fed the
chunks in order and returns the complete records found so far, each with its
position in the stream (`base` plus bytes fed before it), and keeps a partial
trailing record for the next feed.
"""

from __future__ import annotations


class Splitter:
    """Cut a byte stream into records; subclasses define where a record ends.

    `base` is the stream position of the first byte fed (a journal offset
    for readers); `label` names the stream in warnings.
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self.base = 0
        self._consumed = 0  # Bytes of the stream before _buf[0].
        self.skipped = 0  # Bytes passed over while out of sync.
        self.label = ""

    @property
    def pending(self) -> int:
        """Bytes of an incomplete record held back for the next feed."""
        return len(self._buf)

    @property
    def position(self) -> int:
        """Stream position of the first byte not yet returned in a record (or skipped)."""
        return self.base + self._consumed

    def feed(self, data: bytes) -> list[bytes]:
        return [record for _, record in self.feed_spans(data)]

    def feed_spans(self, data: bytes) -> list[tuple[int, bytes]]:
        """Complete records ending in `data`, each with its stream position."""
        buf = self._buf
        buf += data
        cuts, consumed = self._cut(buf)
        at = self.position
        spans = [(at + begin, bytes(buf[begin:end])) for begin, end in cuts]
        del buf[:consumed]
        self._consumed += consumed
        return spans

    def _cut(self, buf: bytearray) -> tuple[list[tuple[int, int]], int]:
        """[begin, end) of complete records in `buf`, and how many leading bytes are done."""
        raise NotImplementedError


class LineSplitter(Splitter):
    """Records end with `\\n` (JSON cannot hold a raw newline inside a document)."""

    def __init__(self) -> None:
        super().__init__()
        self._scanned = 0  # _buf before this holds no newline.

    def _cut(self, buf: bytearray) -> tuple[list[tuple[int, int]], int]:
        cuts: list[tuple[int, int]] = []
        begin = 0
        at = buf.find(b"\n", self._scanned)
        while at >= 0:
            cuts.append((begin, at + 1))
            begin = at + 1
            at = buf.find(b"\n", begin)
        self._scanned = len(buf) - begin
        return cuts, begin

    def feed_block(self, data: bytes) -> tuple[int, bytes]:
        """The complete lines ending in `data` as one block, and its stream position.

        For a reader that decodes many lines at once: no bytes object per line.
        """
        buf = self._buf
        buf += data
        end = buf.rfind(b"\n", self._scanned) + 1
        if end == 0:
            self._scanned = len(buf)
            return self.position, b""
        at, block = self.position, bytes(buf[:end])
        del buf[:end]
        self._consumed += end
        self._scanned = len(buf)
        return at, block


class CSVSplitter(Splitter):
    """Records end with a newline outside double quotes (RFC 4180 fields may hold newlines)."""

    def __init__(self) -> None:
        super().__init__()
        self._scanned = 0
        self._quoted = False  # Whether _buf[_scanned] is inside a quoted field.

    def _cut(self, buf: bytearray) -> tuple[list[tuple[int, int]], int]:
        cuts: list[tuple[int, int]] = []
        begin, i, quoted, n = 0, self._scanned, self._quoted, len(buf)
        while i < n:
            if quoted:
                # A doubled quote closes and at once reopens: no special case needed.
                close = buf.find(b'"', i)
                if close < 0:
                    i = n
                    break
                quoted, i = False, close + 1
                continue
            newline = buf.find(b"\n", i)
            quote = buf.find(b'"', i, newline if newline >= 0 else n)
            if quote >= 0:
                quoted, i = True, quote + 1
            elif newline < 0:
                i = n
            else:
                cuts.append((begin, newline + 1))
                begin = i = newline + 1
        self._scanned, self._quoted = i - begin, quoted
        return cuts, begin
