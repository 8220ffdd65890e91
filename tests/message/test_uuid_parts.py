"""get_parts agrees with the single-field accessors."""

from __future__ import annotations

from gazette_core.message.uuid import (
    Flags,
    build_uuid,
    get_clock,
    get_flags,
    get_parts,
    get_producer_id,
)
from tests.message.support import A


def test_get_parts_is_clock_flags_and_producer() -> None:
    u = build_uuid(A, (0x0123456789ABCDE << 4) | 0x7, Flags.ACK_TXN)
    assert get_parts(u) == (get_clock(u), get_flags(u), get_producer_id(u))
    assert get_parts(u) == ((0x0123456789ABCDE << 4) | 0x7, 2, A)
