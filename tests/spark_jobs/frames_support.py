"""Journals for the journals-as-DataFrames tests: every codec and framing, file and S3 stores.

Each message journal gets rounds of records written with hand-made UUIDs, so
the test knows which are committed: a committed message, a transaction of
two (committed by its ACK), a pending message rolled back by a later ACK, a
message of a second producer, a duplicate of the first message, and a
transaction whose ACK comes in the next round (often in the next fragment).
"""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import pytest

from gazette_core.broker.client.journals import list_fragments
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.local import s3 as local_s3
from gazette_core.local import stack as local_stack
from gazette_core.local.stack import Stack
from gazette_core.message.uuid import Flags, build_uuid
from spark_jobs.session import get_session, stop_session
from tests.gazctl.support import isolated_state_home, ok, stop_stack, wait_primaries, with_broker

PRODUCER = bytes.fromhex("010203040506")
OTHER = bytes.fromhex("0b0b0b0b0b0b")
ROUNDS = 6
# (name, framing, codec, on S3): every codec for JSON lines, two for CSV and for raw.
JOURNALS = [
    ("json/none", "json", "NONE", False),
    ("json/gzip", "json", "GZIP", False),
    ("json/offload", "json", "GZIP_OFFLOAD_DECOMPRESSION", True),
    ("json/snappy", "json", "SNAPPY", True),
    ("json/zstd", "json", "ZSTANDARD", False),
    ("csv/gzip", "csv", "GZIP", True),
    ("csv/zstd", "csv", "ZSTANDARD", False),
    ("raw/none", "raw", "NONE", False),
    ("raw/snappy", "raw", "SNAPPY", True),
]
CONTENT_TYPES = {"json": "application/x-ndjson", "csv": "text/csv"}


@contextmanager
def s3_stack(factory: pytest.TempPathFactory, name: str) -> Iterator[Stack]:
    """A stack with the S3 emulator; this process and Spark's workers get its credentials.
    The module's Spark session is stopped with it."""
    directory = factory.mktemp(name)
    with isolated_state_home(factory.mktemp("state")), pytest.MonkeyPatch.context() as mp:
        for key, value in local_s3.ENV.items():
            mp.setenv(key, value)
        try:
            yield local_stack.up(directory, s3=True, timeout=60, activate=False)
        finally:
            stop_session()
            stop_stack(directory)


@contextmanager
def spark_stack(factory: pytest.TempPathFactory, name: str) -> Iterator[Stack]:
    """A stack with `file://` stores only; the module's Spark session is stopped with it."""
    directory = factory.mktemp(name)
    with isolated_state_home(factory.mktemp("state")):
        try:
            yield local_stack.up(directory, timeout=60, activate=False)
        finally:
            stop_session()
            stop_stack(directory)


def s3_session(master: str, app_name: str) -> Any:
    """A Spark session whose executors have the S3 emulator's credentials."""
    # Workers of an earlier session's JVM would lack them: get_session starts a new one.
    extra = {f"spark.executorEnv.{k}": v for k, v in local_s3.ENV.items()}
    return get_session(master, app_name=app_name, extra=extra)


@dataclass
class Written:
    """What was appended to one journal: committed UUIDs in commit order."""

    committed: list[str] = field(default_factory=list)
    records: int = 0


def specs(prefix: str, s3_store: str) -> str:
    children = []
    for name, kind, codec, on_s3 in sorted(JOURNALS):
        labels = f"      - name: kind\n        value: {kind}\n"
        if kind in CONTENT_TYPES:
            labels += f"      - name: content-type\n        value: {CONTENT_TYPES[kind]}\n"
        store = s3_store if on_s3 else "file:///"
        children.append(f"  - name: {prefix}/{name}\n    revision: 0\n    labels:\n{labels}"
                        f"    fragment:\n      compression_codec: {codec}\n"
                        f"      stores:\n        - \"{store}\"\n")
    return (f"name: {prefix}/\nreplication: 1\nlabels:\n  - name: suite\n    value: {prefix}\n"
            "fragment:\n  length: 1024\n  stores:\n    - file:///\n  refresh_interval: 1s\n"
            "children:\n" + "".join(children))


def _uuid(producer: bytes, clock: int, flags: Flags) -> str:
    return str(build_uuid(producer, clock << 4, flags))


def _encode(kind: str, u: str, n: int) -> bytes:
    text = f'hello, "world" {n}\nsecond line' if n % 2 else f"plain {n}"
    if kind == "json":
        # "journal" is also a metadata column's name: the document's comes out as doc_journal.
        doc: dict[str, Any] = ({"uuid": u, "n": n, "text": text, "journal": f"src-{n}"}
                               if n >= 0 else {"uuid": u})
        return json.dumps(doc, separators=(",", ":")).encode() + b"\n"
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow([u, n, text] if n >= 0 else [u, "", ""])
    return out.getvalue().encode()


def message_round(kind: str, r: int, written: Written) -> bytes:
    """One round of records; ACKs (n = -1) carry no fields."""
    base = 1_000 + r * 100
    first = _uuid(PRODUCER, base + 1, Flags.OUTSIDE_TXN)
    records: list[tuple[str, int, bool]] = [
        (first, r * 10 + 1, True),
        (_uuid(PRODUCER, base + 2, Flags.CONTINUE_TXN), r * 10 + 2, True),
        (_uuid(PRODUCER, base + 3, Flags.CONTINUE_TXN), r * 10 + 3, True),
        (_uuid(PRODUCER, base + 3, Flags.ACK_TXN), -1, False),
        (_uuid(PRODUCER, base + 4, Flags.CONTINUE_TXN), r * 10 + 4, False),
        (_uuid(PRODUCER, base + 3, Flags.ACK_TXN), -1, False),  # rolls back base + 4
        (_uuid(OTHER, base + 5, Flags.OUTSIDE_TXN), r * 10 + 5, True),
        (first, r * 10 + 1, False),  # a duplicate
    ]
    if r > 0:  # commits the previous round's trailing transaction first
        records.insert(0, (_uuid(OTHER, base - 50, Flags.ACK_TXN), -1, False))
    if r < ROUNDS - 1:
        records.append((_uuid(OTHER, base + 50, Flags.CONTINUE_TXN), r * 10 + 6, False))
    data = b""
    for u, n, committed in records:
        data += _encode(kind, u, n)
        if committed:
            written.committed.append(u)
    if r > 0:  # the trailing message of the previous round: committed only now
        written.committed.append(_uuid(OTHER, base - 50, Flags.CONTINUE_TXN))
    written.records += len(records)
    return data


def raw_round(r: int) -> bytes:
    return b"".join(f"raw line {r}.{i} {'x' * (i * 7)}\n".encode() for i in range(12))


def populate(address: str, prefix: str, s3_store: str) -> dict[str, Written]:
    """Apply and fill the journals; return once all but each spool are persisted."""
    ok("journals", "apply", "--broker.address", address, input=specs(prefix, s3_store))
    wait_primaries(address, f"suite={prefix}")
    written: dict[str, Written] = {}
    for name, kind, _, _ in JOURNALS:
        journal = f"{prefix}/{name}"
        written[journal] = Written()
        for r in range(ROUNDS):
            data = raw_round(r) if kind == "raw" else message_round(kind, r, written[journal])
            ok("journals", "append", "-l", f"name={journal}", "--broker.address", address,
               input=data)
    for name, _, _, _ in JOURNALS:
        wait_persisted(address, f"{prefix}/{name}")
    return written


def fragments(address: str, journal: str) -> list[pb.Fragment]:
    listed = with_broker(address, lambda stub: list_fragments(
        stub, pb.FragmentsRequest(journal=journal)))
    return [f.spec for f in listed]


def wait_persisted(address: str, journal: str, limit: float = 60) -> None:
    """Until every fragment but the last (the spool) has a store and a mod_time."""
    deadline = time.monotonic() + limit
    while True:
        frags = fragments(address, journal)
        if len(frags) >= 3 and all(f.mod_time for f in frags[:-1]) and not frags[-1].mod_time:
            return
        assert time.monotonic() < deadline, f"{journal} not persisted: {frags}"
        time.sleep(0.2)


def read_records(address: str, journal: str, kind: str) -> list[tuple[int, list[str]]]:
    """`gazctl journals read` of a message journal, cut into (offset, fields) records."""
    content = ok("journals", "read", "-l", f"name={journal}", "--broker.address",
                 address).stdout_bytes
    records, offset = [], 0
    text = content.decode()
    if kind == "json":
        for line in text.splitlines(keepends=True):
            doc = json.loads(line)
            records.append((offset, [doc["uuid"], str(doc.get("n", "")), doc.get("text", ""),
                                     doc.get("journal", "")]))
            offset += len(line.encode())
        return records
    stream = io.StringIO(text, newline="")
    reader = csv.reader(stream)
    for row in reader:
        records.append((offset, row))
        offset = len(text[:stream.tell()].encode())
    return records


def expected_rows(address: str, journal: str, kind: str, written: Written
                  ) -> list[tuple[Any, ...]]:
    """The committed records of `gazctl journals read`: each committed UUID's first record.

    Rows are (journal, offset, uuid, producer, [doc_journal,] n, text), doc_journal
    for JSON lines only.
    """
    committed, seen = set(written.committed), set()
    rows = []
    for offset, (u, n, text, *source) in read_records(address, journal, kind):
        if u in committed and u not in seen:
            seen.add(u)
            rows.append((journal, offset, u, UUID(u).bytes[10:].hex(), *source, int(n), text))
    return rows
