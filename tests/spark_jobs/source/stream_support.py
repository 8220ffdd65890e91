"""Journals for the streaming-source tests: JSON messages with hand-made UUIDs, appended in
rounds, and what `read_committed()` says each journal holds.

A round of one journal holds a message outside transactions, a transaction of
two committed by its ACK, a message rolled back, a duplicate of the first
message, an ACK that commits the previous round's trailing message of a second
producer, and a new trailing message whose ACK comes with the next round (so
with small fragments transactions straddle fragments and micro-batches).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from gazette_core.broker.client.appender import append
from gazette_core.message.committed import read_committed
from gazette_core.message.interfaces import JSONRecord
from gazette_core.message.uuid import Flags, build_uuid
from tests.gazctl.support import ok, wait_primaries, with_broker
from tests.spark_jobs.frames_support import fragments

PRODUCER = bytes.fromhex("0a0000000001")
OTHER = bytes.fromhex("0b0000000002")

Row = tuple[str, int, str]
"""(journal, offset, uuid): what a streaming query's output is compared by."""


def specs(prefix: str, names: list[str], length: int = 1024) -> str:
    """A tree of JSON-lines journals in the file store, rolling fragments every `length`."""
    children = "".join(f"  - name: {prefix}/{name}\n    revision: 0\n" for name in names)
    return (f"name: {prefix}/\nreplication: 1\nlabels:\n  - name: suite\n    value: {prefix}\n"
            "  - name: content-type\n    value: application/x-ndjson\n"
            f"fragment:\n  length: {length}\n  compression_codec: NONE\n  stores:\n"
            "    - file:///\n  refresh_interval: 1s\n"
            f"children:\n{children}")


def apply(address: str, prefix: str, names: list[str]) -> None:
    ok("journals", "apply", "--broker.address", address, input=specs(prefix, names))
    wait_primaries(address, f"suite={prefix}")


def _record(producer: bytes, clock: int, flags: Flags, n: int) -> bytes:
    u = str(build_uuid(producer, clock << 4, flags))
    doc: dict[str, Any] = {"uuid": u} if n < 0 else {"uuid": u, "n": n}
    return json.dumps(doc, separators=(",", ":")).encode() + b"\n"


def message_round(r: int, ack_trailing: bool = True) -> bytes:
    """Round `r` (from 0) of one journal's messages; clocks grow with `r`."""
    base = 1_000 + r * 100
    first = _record(PRODUCER, base + 1, Flags.OUTSIDE_TXN, r * 10 + 1)
    records = [
        first,
        _record(PRODUCER, base + 2, Flags.CONTINUE_TXN, r * 10 + 2),
        _record(PRODUCER, base + 3, Flags.CONTINUE_TXN, r * 10 + 3),
        _record(PRODUCER, base + 3, Flags.ACK_TXN, -1),
        _record(PRODUCER, base + 4, Flags.CONTINUE_TXN, r * 10 + 4),
        _record(PRODUCER, base + 3, Flags.ACK_TXN, -1),  # rolls back base + 4
        first,  # a duplicate
    ]
    if r > 0 and ack_trailing:  # commits the previous round's trailing message
        records.insert(0, _record(OTHER, base - 50, Flags.ACK_TXN, -1))
    records.append(_record(OTHER, base + 50, Flags.CONTINUE_TXN, r * 10 + 6))
    return b"".join(records)


def trailing_ack(r: int) -> bytes:
    """The ACK of round `r`'s trailing message alone."""
    return _record(OTHER, 1_000 + r * 100 + 50, Flags.ACK_TXN, -1)


def append_to(address: str, journal: str, data: bytes) -> None:
    with_broker(address, lambda stub: append(stub, journal, data))


def committed(address: str, journals: list[str], offset: int = 0) -> list[Row]:
    """`read_committed()` of each journal from `offset` up to its write head, sorted."""
    async def read(stub: Any) -> list[Row]:
        rows = []
        for journal in journals:
            async for env in read_committed(stub, journal, lambda _: JSONRecord(),
                                            offset=offset, block=False):
                rows.append((env.journal, env.begin, str(env.message.get_uuid())))
        return rows

    return sorted(with_broker(address, read))


def output_rows(spark: Any, directory: Path) -> list[Row]:
    """The rows a file sink committed into `directory` (its metadata log decides)."""
    if not (directory / "_spark_metadata").is_dir():
        return []
    df = spark.read.schema("journal STRING, offset LONG, uuid STRING").json(str(directory))
    return sorted((r.journal, r.offset, r.uuid) for r in df.collect())


def wait_listed_without(address: str, journal: str, begin: int, limit: float = 30) -> None:
    """Until the broker no longer lists the fragment of `journal` that begins at `begin`."""
    deadline = time.monotonic() + limit
    while any(f.begin == begin for f in fragments(address, journal)):
        assert time.monotonic() < deadline, f"{journal} still lists a fragment at {begin}"
        time.sleep(0.2)


def wait_persisted_to(address: str, journal: str, offset: int, limit: float = 30) -> None:
    """Until the fragments of `journal` up to `offset` are persisted."""
    deadline = time.monotonic() + limit
    while not all(f.mod_time for f in fragments(address, journal) if f.begin < offset):
        assert time.monotonic() < deadline, f"{journal} not persisted up to {offset}"
        time.sleep(0.2)
