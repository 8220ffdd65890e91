"""Whole columns of message UUIDs, parsed and formatted with arrays, agree with
gazette_core.message.uuid one UUID at a time."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from gazette_core.message.uuid import build_uuid, get_parts, new_producer_id
from spark_jobs.decode.uuid_columns import format_uuids, parse_uuids


def test_parsed_columns_are_each_uuids_parts() -> None:
    rng = random.Random(7)
    uuids = [build_uuid(new_producer_id(), rng.getrandbits(64), rng.choice((0, 1, 2, 0x3FF)))
             for _ in range(500)]
    texts = [str(u) for u in uuids[:250]] + [None, ""] + [str(u).upper() for u in uuids[250:]]
    parsed = parse_uuids(pa.array(texts))
    assert parsed is not None
    got = list(zip(parsed.clock.tolist(), parsed.flags.tolist(), parsed.producer.tolist(),
                   strict=True))
    assert got[250:252] == [(0, 0, 0), (0, 0, 0)]
    assert got[:250] + got[252:] == [(c, f, int.from_bytes(p, "big"))
                                     for c, f, p in map(get_parts, uuids)]


@pytest.mark.parametrize("text", [
    "x" * 36,  # not hex
    "00000000 0000-0000-0000-000000000000",  # a space for a dash
    "0000000-00000-0000-0000-000000000000",  # a dash out of place
    "{00000000-0000-0000-0000-0000000000}",  # another spelling
])
def test_a_column_with_a_uuid_spelt_otherwise_is_not_parsed(text: str) -> None:
    assert parse_uuids(pa.array(["00000000-0000-1000-8000-010203040506", text])) is None


@pytest.mark.parametrize("flags", [0, 1, 2])
def test_formatted_uuids_are_build_uuids_text(flags: int) -> None:
    rng = random.Random(flags)
    producer = new_producer_id()
    clocks = np.array([rng.getrandbits(64) for _ in range(300)], dtype=np.uint64)
    assert format_uuids(producer, clocks, flags) == [
        str(build_uuid(producer, c, flags)) for c in clocks.tolist()]
