"""Random journals of message UUIDs, as producers write them, for tests that compare two
ways of sequencing the same journal."""

from __future__ import annotations

import random
from uuid import UUID

from gazette_core.message.interfaces import ZERO_UUID
from gazette_core.message.uuid import Flags, build_uuid

Event = tuple[int, UUID]  # (offset, uuid); every record is 10 bytes long


def journal(rng: random.Random, size: int, outside: float = 0.35, repeats: float = 0.1,
            bare: float = 0.05) -> list[Event]:
    """Random producer behaviour, recorded as the UUIDs a reader would see in order:
    messages outside transactions (a share `outside` of them), transactions committed
    or rolled back by their ACK (the rest but `repeats` duplicates of earlier messages,
    as a retried append makes, and `bare` messages without a UUID)."""
    bare += repeats
    outside += bare
    rest = (1 - outside) / 5
    producers = [bytes([0x01, i, 0, 0, 0, i]) for i in range(3)]
    clocks = dict.fromkeys(producers, 1 << 40)
    acked = dict.fromkeys(producers, 0)
    seen: list[UUID] = []
    out: list[UUID] = []
    while len(out) < size:
        p = rng.choice(producers)
        roll = rng.random()
        if roll < repeats and seen:
            out.append(rng.choice(seen[-8:]))  # A retried append repeats an earlier message.
            continue
        if roll < bare:
            out.append(ZERO_UUID)
            continue
        clocks[p] += rng.choice((1, 16, 160))
        if roll < outside:
            u = build_uuid(p, clocks[p], Flags.OUTSIDE_TXN)
            acked[p] = clocks[p]
        elif roll < outside + 3 * rest:
            u = build_uuid(p, clocks[p], Flags.CONTINUE_TXN)
        elif roll < outside + 4 * rest:
            u = build_uuid(p, clocks[p], Flags.ACK_TXN)
            acked[p] = clocks[p]
        else:  # A rollback: the last ACK again, or below it.
            u = build_uuid(p, acked[p] - rng.choice((0, 0, 16)), Flags.ACK_TXN)
        seen.append(u)
        out.append(u)
    return [(10 * i, u) for i, u in enumerate(out)]
