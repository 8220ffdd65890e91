"""Mappings: FNV-1a, stable modulo and rendezvous choices, and partitions watched on a broker."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.protocol.selector_ext import parse_selector
from gazette_core.message.mapping import (
    NoPartitionsError,
    Partitions,
    fnv1a32,
    modulo_mapping,
    random_mapping,
    rendezvous_mapping,
)
from gazette_core.testing.broker import journal_spec
from tests.broker.support import create
from tests.message.support import Note

NDJSON = (("app.gazette.dev/message-type", "Note"), ("content-type", "application/x-ndjson"))
SELECTOR = "app.gazette.dev/message-type=Note"


def snapshot(*names: str, labels: tuple[tuple[str, str], ...] = NDJSON) -> pb.ListResponse:
    return pb.ListResponse(journals=[
        pb.ListResponse.Journal(spec=journal_spec(n, labels=labels)) for n in names])


def static(*names: str) -> Partitions:
    parts = Partitions(None, parse_selector(SELECTOR))  # type: ignore[arg-type]
    parts.apply(snapshot(*names))
    return parts


def key(msg: object) -> str:
    return msg.text  # type: ignore[attr-defined, no-any-return]


def test_fnv1a32_known_values() -> None:
    assert fnv1a32(b"") == 0x811C9DC5
    assert fnv1a32("a") == 0xE40C292C
    assert fnv1a32("foobar") == 0xBF9CF968


def test_modulo_mapping_is_fnv_modulo_over_names_sorted() -> None:
    parts = static("p/2", "p/0", "p/1")
    assert [s.name for s in parts.journals] == ["p/0", "p/1", "p/2"]
    mapping = modulo_mapping(key, parts)
    for text in ("a", "foobar", "stream-17"):
        journal, framing = mapping(Note(text=text))
        assert journal == f"p/{fnv1a32(text) % 3}"
        assert framing.content_type == "application/x-ndjson"


def test_rendezvous_moves_only_keys_the_new_partition_wins() -> None:
    keys = [f"key-{i}" for i in range(300)]
    before = {k: rendezvous_mapping(key, static("p/0", "p/1", "p/2"))(Note(text=k))[0]
              for k in keys}
    after = {k: rendezvous_mapping(key, static("p/0", "p/1", "p/2", "p/3"))(Note(text=k))[0]
             for k in keys}
    moved = [k for k in keys if before[k] != after[k]]
    assert moved and all(after[k] == "p/3" for k in moved)
    assert set(before.values()) == {"p/0", "p/1", "p/2"}
    # Stable: the choice is the highest hash(key) XOR hash(name).
    for k in keys[:20]:
        best = max(["p/0", "p/1", "p/2", "p/3"], key=lambda n, k=k: fnv1a32(k) ^ fnv1a32(n))
        assert after[k] == best


def test_random_mapping_uses_every_partition_and_none_is_an_error() -> None:
    seen = Counter(random_mapping(static("p/0", "p/1"))(Note())[0] for _ in range(200))
    assert set(seen) == {"p/0", "p/1"}
    with pytest.raises(NoPartitionsError, match=r"app\.gazette\.dev/message-type=Note"):
        random_mapping(static())(Note())


def test_journals_without_a_framing_are_left_out() -> None:
    parts = static()
    parts.apply(pb.ListResponse(journals=[
        pb.ListResponse.Journal(spec=journal_spec("p/csv", labels=(("content-type", "text/csv"),))),
        pb.ListResponse.Journal(spec=journal_spec("p/log", labels=(
            ("content-type", "application/x-gazette-recoverylog"),))),
    ]))
    assert [s.name for s in parts.journals] == ["p/csv"]


async def test_watched_partitions_pick_up_a_journal_added_later(
        stub: pb_grpc.JournalStub) -> None:
    await create(stub, journal_spec("notes/part-0", labels=NDJSON),
                 journal_spec("notes/part-1", labels=NDJSON),
                 journal_spec("other/x", labels=(("content-type", "text/csv"),)))
    async with Partitions(stub, parse_selector(SELECTOR)) as parts:
        assert [s.name for s in parts.journals] == ["notes/part-0", "notes/part-1"]
        mapping = modulo_mapping(key, parts)
        keys = [f"k{i}" for i in range(30)]
        assert {mapping(Note(text=k))[0] for k in keys} == {"notes/part-0", "notes/part-1"}

        await create(stub, journal_spec("notes/part-2", labels=NDJSON))
        async with asyncio.timeout(10):
            while len(parts.journals) < 3:
                await parts.wait_changed()
        assert [s.name for s in parts.journals] == [
            "notes/part-0", "notes/part-1", "notes/part-2"]
        # The running mapping now uses the new partition, no restart needed.
        assert "notes/part-2" in {mapping(Note(text=k))[0] for k in keys}
