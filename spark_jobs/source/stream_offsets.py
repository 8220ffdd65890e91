"""Offsets of the `gazette` streaming source: per journal, with the producers' states there.

What Spark checkpoints for a micro-batch is, for every journal the query
reads, an offset and the state of each producer at that offset (range_read's
`ProducerState`: last ACK, largest pending clock, offset of its open
transaction). Carrying the states is what makes a transaction pending at the
end of one micro-batch come out once, in the batch that reads its ACK:

    {"journals": {"<journal>": {"offset": 4096,
                                "producers": [["0a0b0c0d0e0f", 17, 19, 3900]]}}}

Keys and producers are sorted, so the same position always has the same
JSON (Spark compares offsets by their JSON to decide whether data is new).

`startingOffsets` is the user's side: `earliest`, `latest`, or a JSON object
of journal names to offsets where -2 means earliest and -1 latest; journals
it does not name start at earliest.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from gazette_core.errors import ValidationError
from spark_jobs.source.range_read import ProducerState

EARLIEST = -2
LATEST = -1


@dataclass(frozen=True)
class Position:
    """Where the query stands in one journal: an offset and the producers' states there."""

    offset: int
    producers: tuple[ProducerState, ...] = ()

    def lowest_needed(self) -> int:
        """The first offset reading on from here needs: open transactions are read again."""
        opens = [begin for _, _, _, begin in self.producers if 0 <= begin < self.offset]
        return min(opens, default=self.offset)


Positions = dict[str, Position]


def encode(positions: Positions) -> dict[str, Any]:
    """The offset dict Spark checkpoints (JSON-able, deterministic)."""
    return {"journals": {name: {"offset": positions[name].offset,
                                "producers": [list(p) for p in sorted(positions[name].producers)]}
                         for name in sorted(positions)}}


def decode(offset: dict[str, Any]) -> Positions:
    """The positions of an offset dict from `encode` (as Spark hands it back)."""
    try:
        journals = offset["journals"]
        return {name: Position(int(entry["offset"]), tuple(
                    (str(p[0]), int(p[1]), int(p[2]), int(p[3])) for p in entry["producers"]))
                for name, entry in journals.items()}
    except (KeyError, TypeError, ValueError, IndexError) as err:
        raise ValidationError("offset", f"{json.dumps(offset)[:200]} is not an offset of the "
                              f"gazette source (a checkpoint of another source?): {err}") from err


def lag_metrics(heads: dict[str, int], ends: dict[str, int]) -> dict[str, int | float]:
    """Bytes each journal's planned end trails its write head, as Kafka's source reports
    offsets behind latest: average, largest and smallest over the journals (0 for none)."""
    behind = [max(0, head - ends.get(name, head)) for name, head in heads.items()]
    if not behind:
        return {"avgOffsetsBehindLatest": 0.0, "maxOffsetsBehindLatest": 0,
                "minOffsetsBehindLatest": 0}
    return {"avgOffsetsBehindLatest": sum(behind) / len(behind),
            "maxOffsetsBehindLatest": max(behind), "minOffsetsBehindLatest": min(behind)}


def parse_starting(text: str) -> str | dict[str, int]:
    """`earliest`, `latest`, or {journal: offset} with -2 for earliest and -1 for latest."""
    lowered = text.strip().lower()
    if lowered in ("earliest", "latest"):
        return lowered
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= EARLIEST
            for v in parsed.values()):
        raise ValidationError("option startingOffsets", f"{text!r} is neither earliest, latest "
                              "nor a JSON object of journal names to offsets (-2: earliest, "
                              "-1: latest), e.g. {\"acme/clicks\": 1024}")
    return {str(name): value for name, value in parsed.items()}


def starting_offset(starting: str | dict[str, int], journal: str, earliest: int,
                    head: int) -> int:
    """Where a journal listed at the query's start begins, by `startingOffsets`."""
    wanted = starting if isinstance(starting, str) else starting.get(journal, EARLIEST)
    if wanted in ("earliest", EARLIEST):
        return earliest
    if wanted in ("latest", LATEST):
        return head
    assert isinstance(wanted, int)
    if wanted > head:
        raise ValidationError("option startingOffsets", f"offset {wanted} of journal {journal} "
                              f"is beyond its write head, {head}")
    return wanted
