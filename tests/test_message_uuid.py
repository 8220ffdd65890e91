"""Gazette message UUIDs: layout, round trips and clock behaviour."""

from __future__ import annotations

import pytest

from gazette_core.message.uuid import (
    GREGORIAN_OFFSET,
    TICK,
    Clock,
    Flags,
    build_uuid,
    get_clock,
    get_flags,
    get_producer_id,
    new_producer_id,
)


def test_uuid_layout_is_rfc4122_version_1_with_gazette_fields() -> None:
    producer = bytes([0x01, 0x02, 0x03, 0x04, 0x05, 0x06])
    clock = (0x0123456789ABCDE << 4) | 0x5
    u = build_uuid(producer, clock, Flags.ACK_TXN)
    assert u.version == 1 and u.variant == "specified in RFC 4122"
    assert u.bytes[0:4] == (0x0123456789ABCDE & 0xFFFFFFFF).to_bytes(4, "big")
    assert u.bytes[4:6] == ((0x0123456789ABCDE >> 32) & 0xFFFF).to_bytes(2, "big")
    assert u.bytes[6:8] == (((0x0123456789ABCDE >> 48) & 0x0FFF) | 0x1000).to_bytes(2, "big")
    assert int.from_bytes(u.bytes[8:10], "big") == 0x8000 | (0x5 << 10) | 0x2
    assert (get_clock(u), get_flags(u), get_producer_id(u)) == (clock, 2, producer)


def test_clock_never_goes_back_and_ticks_a_microsecond() -> None:
    clock = Clock()
    clock.update(unix_ns=1_700_000_000_000_000_000)
    start = clock.value
    assert start == ((1_700_000_000_000_000_000 // 100) + GREGORIAN_OFFSET) << 4
    clock.update(unix_ns=1_600_000_000_000_000_000)  # earlier: ignored
    assert clock.value == start
    assert clock.tick() == start + TICK
    u = build_uuid(new_producer_id(), clock.value, Flags.OUTSIDE_TXN)
    assert u.time == (start + TICK) >> 4  # the standard v1 timestamp field


def test_producer_ids_are_random_with_the_multicast_bit() -> None:
    ids = {new_producer_id() for _ in range(50)}
    assert len(ids) == 50 and all(len(i) == 6 and i[0] & 0x01 for i in ids)


def test_out_of_range_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="6 bytes"):
        build_uuid(b"\x01", 0, 0)
    with pytest.raises(ValueError, match="10 bits"):
        build_uuid(bytes(6), 0, 0x400)
