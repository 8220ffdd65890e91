"""Journals built to straddle range boundaries, for the batch-read tests of the data source.

Each append is one fragment (the journals' fragment length is below every
append), so with a tiny `splitBytes` every append is a range of its own and
the scenarios below cross range boundaries: a transaction whose ACK is in the
next range, one spanning three ranges, a rollback ACK ranges after its
pending messages, a retried append whose duplicates open the range after
their originals, and messages without a UUID. Expectations come from
`read_committed()` of the journals, never from the code under test.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from gazette_core.broker.client.appender import append
from gazette_core.broker.client.channel import close_channels, journal_stub
from gazette_core.message.committed import read_committed
from gazette_core.message.interfaces import ZERO_UUID, CSVRecord, JSONRecord, Message
from gazette_core.message.uuid import Flags, build_uuid
from tests.gazctl.committed_support import CLOCK, csv_record, json_record
from tests.gazctl.support import ok, wait_primaries
from tests.spark_jobs.frames_support import fragments

A, B, C, D, F = (bytes([0x0A, n, 0, 0, 0, n]) for n in range(1, 6))
OUT, CONT, ACK = Flags.OUTSIDE_TXN, Flags.CONTINUE_TXN, Flags.ACK_TXN
NO_UUID = None
FRAGMENT_LENGTH = 1024  # the least a spec may have
PAD = "p" * 1000  # a filler message alone outgrows a fragment: each append rolls one

CODECS = {"json": "GZIP", "csv": "ZSTANDARD", "raw": "SNAPPY"}

Record = tuple[bytes, int, int] | None  # (producer, tick, flags), NO_UUID: no UUID at all
SCENARIO: list[list[Record]] = [
    # A's transaction; B's opens; C commits t1; D commits t1; a message without UUID.
    [(A, 1, CONT), (A, 2, CONT), (B, 1, CONT), (C, 1, OUT), (D, 1, OUT), NO_UUID],
    # A's ACK one range after its messages; B goes on; C's pending messages.
    [(A, 2, ACK), (B, 2, CONT), (C, 2, CONT), (C, 3, CONT)],
    # B's ACK: its transaction spanned three ranges. D's last message of the range...
    [(B, 3, CONT), (B, 3, ACK), (D, 2, OUT)],
    # ...is retried: its duplicate opens this range. C's ACK of t1 rolls back t2 and t3.
    [(D, 2, OUT), (C, 1, ACK), (D, 3, CONT), (D, 4, CONT), (D, 4, ACK)],
    # D's transaction again (a retried append), then more of C and one without UUID.
    [(D, 3, CONT), (D, 4, CONT), (D, 4, ACK), (C, 5, OUT), NO_UUID],
    # A transaction left pending at the end: never committed.
    [(A, 6, CONT), (C, 6, OUT)],
]
# What a read-committed reader must give, known independently of any reader: all but C's
# rolled-back t2 and t3, A's pending t6, the duplicates and the ACKs; one of each filler.
COMMITTED: list[tuple[bytes, int, int]] = [
    (A, 1, CONT), (A, 2, CONT), (B, 1, CONT), (B, 2, CONT), (B, 3, CONT), (C, 1, OUT),
    (C, 5, OUT), (C, 6, OUT), (D, 1, OUT), (D, 2, OUT), (D, 3, CONT), (D, 4, CONT),
    *[(F, i + 1, OUT) for i in range(len(SCENARIO))]]


def uuid_of(record: tuple[bytes, int, int]) -> str:
    producer, tick, flags = record
    return str(build_uuid(producer, CLOCK + tick * 160, flags))


def encode(kind: str, record: Record, n: int, text: str = "") -> bytes:
    words = text or f"message {n}"
    if record is NO_UUID:
        return (f'{{"n":{n},"text":"{words}"}}\n' if kind == "json"
                else f"{ZERO_UUID},{n},{words}\n").encode()  # CSV's column 0 must parse
    producer, tick, flags = record
    if kind == "json":
        return json_record(producer, tick, flags, words)[:-2] + f',"n":{n}}}\n'.encode()
    return csv_record(producer, tick, flags, str(n), words)


def append_scenario(address: str, journal: str, kind: str, appends: int = len(SCENARIO)
                    ) -> list[tuple[int, int]]:
    """Append the scenario's first `appends` appends, each with a filler; their spans."""
    async def run() -> list[tuple[int, int]]:
        stub = journal_stub(address)
        spans, n = [], 0
        try:
            for i, records in enumerate(SCENARIO[:appends]):
                data = b""
                for record in records:
                    n += 1
                    data += encode(kind, record, n)
                n += 1
                data += encode(kind, (F, i + 1, OUT), n, PAD)
                resp = await append(stub, journal, data)
                spans.append((resp.commit.begin, resp.commit.end))
            return spans
        finally:
            await close_channels()

    return asyncio.run(run())


def committed(address: str, journal: str, kind: str, offset: int = 0
              ) -> list[tuple[int, str | None]]:
    """(offset, uuid) of each message `read_committed()` gives from `offset`, in order."""
    def new(_: Any) -> Message:
        return JSONRecord() if kind == "json" else CSVRecord()

    async def run() -> list[tuple[int, str | None]]:
        out = []
        try:
            async for env in read_committed(journal_stub(address), journal, new, offset=offset,
                                            block=False):
                u = env.message.get_uuid()
                out.append((env.begin, None if u == ZERO_UUID else str(u)))
            return out
        finally:
            await close_channels()

    return asyncio.run(run())


def specs(prefix: str, journals: list[tuple[str, str, str]]) -> str:
    """(name, content-type or "", store) journals under `prefix`, fragments of FRAGMENT_LENGTH."""
    children = []
    for name, content_type, store in sorted(journals):
        labels = (f"    labels:\n      - name: content-type\n        value: {content_type}\n"
                  if content_type else "")
        children.append(f"  - name: {prefix}/{name}\n    revision: 0\n{labels}"
                        f"    fragment:\n      compression_codec: {CODECS.get(name, 'NONE')}\n"
                        f"      stores:\n        - \"{store}\"\n")
    return (f"name: {prefix}/\nreplication: 1\nlabels:\n  - name: suite\n    value: {prefix}\n"
            f"fragment:\n  length: {FRAGMENT_LENGTH}\n  stores:\n    - file:///\n"
            "  refresh_interval: 1s\nchildren:\n" + "".join(children))


def apply_journals(address: str, prefix: str, journals: list[tuple[str, str, str]]) -> None:
    ok("journals", "apply", "--broker.address", address, input=specs(prefix, journals))
    wait_primaries(address, f"suite={prefix}")


def wait_for(what: str, check: Callable[[], bool], limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while not check():
        assert time.monotonic() < deadline, f"{what} did not happen within {limit}s"
        time.sleep(0.2)


def persisted_but_spool(address: str, journal: str) -> bool:
    frags = fragments(address, journal)
    return all(f.mod_time for f in frags[:-1]) and not frags[-1].mod_time
