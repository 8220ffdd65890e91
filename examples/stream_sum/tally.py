"""The chunker's bookkeeping: which sums are expected, and how those read back compare."""

from __future__ import annotations

from dataclasses import dataclass, field

from examples.stream_sum import crc64


@dataclass
class Expected:
    seq_no: int = 0
    value: int = 0
    finished: bool = False

    def add(self, data: bytes) -> None:
        self.seq_no += 1
        if data:
            self.value = crc64.update(self.value, data)
        else:
            self.finished = True


@dataclass
class Tally:
    """Sums read back against the streams sent. Sums of other runs' streams are ignored."""

    expected: dict[str, Expected] = field(default_factory=dict)
    seen: dict[str, int] = field(default_factory=dict)
    verified: int = 0
    wrong: int = 0
    duplicated: int = 0

    def sent(self, stream: str, data: bytes) -> None:
        self.expected.setdefault(stream, Expected()).add(data)

    def observe(self, stream: str, seq_no: int, value: int) -> None:
        want = self.expected.get(stream)
        if want is None:
            return
        self.seen[stream] = self.seen.get(stream, 0) + 1
        if self.seen[stream] > 1:
            self.duplicated += 1
        elif want.finished and (want.seq_no, want.value) == (seq_no, value):
            self.verified += 1
        else:
            self.wrong += 1

    @property
    def missing(self) -> int:
        return sum(1 for s, e in self.expected.items() if e.finished and s not in self.seen)

    def summary(self) -> dict[str, int]:
        return {"streams": sum(1 for e in self.expected.values() if e.finished),
                "verified": self.verified, "wrong": self.wrong,
                "duplicated": self.duplicated, "missing": self.missing}
