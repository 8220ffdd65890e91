"""Reads from offset 0 after a prune left only the unpersisted spool: they jump to its begin.

A prune deletes every persisted fragment of a journal; what remains is the
spool the broker has not persisted yet. A read below it must jump to it (the
response says the new offset) through the client library, `gazctl journals
read` (whose --offsets-out records the end reached) and the HTTP gateway.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

from gazette_core.broker.client.retry_reader import RetryReader
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.local.stack import Stack
from tests.broker.http_support import raw_get
from tests.gazctl.support import ok, with_broker
from tests.gazctl.test_journals_prune import (  # noqa: F401 (fixtures)
    APPENDS,
    _fragments,
    child,
    files,
    one_spark_session,
    populate,
    prune,
    two_hours_later,
)

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub

SPOOL = (2400, 3200)  # what populate() leaves unpersisted


def pruned_to_spool(address: str, stack: Stack, prefix: str) -> str:
    """A journal whose persisted fragments were pruned and dropped from the broker's index."""
    journal = f"{prefix}/hourly"
    populate(address, prefix, [child(prefix, "hourly", "1h")], ["hourly"])
    got = prune(address, stack, "-l", f"suite={prefix}")
    assert (got["fragments_pruned"], files(stack, journal)) == (2, [])
    deadline = time.monotonic() + 30
    while [(f.spec.begin, f.spec.end, f.spec.mod_time)
           for f in _fragments(address, journal)] != [(*SPOOL, 0)]:
        assert time.monotonic() < deadline, _fragments(address, journal)
        time.sleep(0.1)
    return journal


def test_client_read_from_zero_jumps_to_the_spool(address: str, stack: Stack) -> None:
    journal = pruned_to_spool(address, stack, "jump-client")

    async def read(stub: JournalAsyncStub) -> tuple[bytes, list[int], int, int]:
        content, announced = b"", []  # the offset of each fragment's metadata
        async with RetryReader(stub, pb.ReadRequest(journal=journal)) as reader:
            async for chunk in reader:
                if not content:
                    announced.append(reader.response.offset)
                content += chunk
            return content, announced, reader.offset, reader.skipped

    content, announced, offset, skipped = with_broker(address, read)

    assert content == APPENDS[3]
    assert (announced, offset, skipped) == ([SPOOL[0]], SPOOL[1], SPOOL[0])


def test_gazctl_read_records_the_end_it_reached(address: str, stack: Stack,
                                                tmp_path: Path) -> None:
    journal = pruned_to_spool(address, stack, "jump-gazctl")
    offsets = tmp_path / "offsets.json"

    result = ok("journals", "read", "-l", f"name={journal}", "--broker.address", address,
                "--offsets-out", str(offsets))

    assert result.stdout_bytes == APPENDS[3]
    assert json.loads(offsets.read_text()) == {journal: SPOOL[1]}


def test_gateway_get_from_zero_returns_the_spool(address: str, stack: Stack) -> None:
    journal = pruned_to_spool(address, stack, "jump-http")
    http = stack.brokers[0].http
    assert http is not None

    head, body, trailer = asyncio.run(raw_get(f"{http}/{journal}?offset=0"))

    assert head.startswith(b"HTTP/1.1 206 "), head
    assert f"Content-Range: bytes {SPOOL[0]}-".encode() in head
    assert body == APPENDS[3]
    assert trailer == b"X-Close-Error: OFFSET_NOT_YET_AVAILABLE\r\n"


def test_reads_right_after_a_prune_skip_what_the_index_still_lists(address: str,
                                                                   stack: Stack) -> None:
    # An hour between listings: the broker's index still lists the pruned fragments.
    p = "jump-stale"
    journal = f"{p}/hourly"
    populate(address, p, [child(p, "hourly", "1h")], ["hourly"], refresh="1h")
    assert prune(address, stack, "-l", f"suite={p}")["fragments_pruned"] == 2
    assert [f.spec.begin for f in _fragments(address, journal)] == [0, 800, 2400]
    http = stack.brokers[0].http
    assert http is not None

    async def read(stub: JournalAsyncStub) -> tuple[bytes, int, int]:
        async with RetryReader(stub, pb.ReadRequest(journal=journal)) as reader:
            content = b"".join([chunk async for chunk in reader])
            return content, reader.offset, reader.skipped

    assert with_broker(address, read) == (APPENDS[3], SPOOL[1], SPOOL[0])
    head, body, _ = asyncio.run(raw_get(f"{http}/{journal}?offset=0"))
    assert f"Content-Range: bytes {SPOOL[0]}-".encode() in head
    assert body == APPENDS[3]
    # The read listed the store again: the index no longer holds what is gone.
    assert [f.spec.begin for f in _fragments(address, journal)] == [2400]


def test_gazctl_read_stops_at_a_gap_below_the_write_head(address: str, stack: Stack,
                                                         tmp_path: Path) -> None:
    p = "gap-gazctl"
    journal = f"{p}/kept"
    populate(address, p, [child(p, "kept", "0s")], ["kept"])
    middle = stack.directory / "fragments" / journal
    (gone,) = [f for f in middle.iterdir() if f.name.startswith(f"{800:016x}-")]
    gone.unlink()  # a persisted fragment lost in the middle: [800, 2400) is not readable
    deadline = time.monotonic() + 30
    while [(f.spec.begin, f.spec.end) for f in _fragments(address, journal)] != [
            (0, 800), SPOOL]:
        assert time.monotonic() < deadline, _fragments(address, journal)
        time.sleep(0.1)
    offsets = tmp_path / "offsets.json"

    result = ok("journals", "read", "-l", f"name={journal}", "--broker.address", address,
                "--offsets-out", str(offsets))

    assert result.stdout_bytes == APPENDS[0]
    assert json.loads(offsets.read_text()) == {journal: 800}
