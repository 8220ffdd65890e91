"""The bank of append bytes behind max_append_rate, on a clock the test moves."""

from __future__ import annotations

import pytest

from gazette_core.broker.append_throttle import BANK_S, RateBank, effective_rate


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(("journal", "cap", "rate"), [
    (0, 0, 0), (500, 0, 500), (0, 800, 800), (500, 800, 500), (900, 800, 800)])
def test_the_effective_rate_is_the_journals_capped_by_the_brokers(
        journal: int, cap: int, rate: int) -> None:
    assert effective_rate(journal, cap) == rate


def test_the_bank_starts_empty_and_fills_at_the_rate() -> None:
    clock = Clock()
    bank = RateBank(clock)
    assert bank.wait(1000, rate=1000) == 1.0
    clock.now += 0.25
    assert bank.wait(1000, rate=1000) == 0.75
    clock.now += 0.75
    assert bank.wait(1000, rate=1000) == 0.0
    bank.take(1000, rate=1000)
    assert bank.wait(500, rate=1000) == 0.5


def test_an_idle_journal_banks_at_most_ten_seconds_of_its_rate() -> None:
    clock = Clock()
    bank = RateBank(clock)
    clock.now += 3600
    assert bank.wait(10 * 1000, rate=1000) == 0.0
    assert bank.balance == BANK_S * 1000
    bank.take(10 * 1000, rate=1000)
    assert bank.wait(1000, rate=1000) == 1.0


def test_a_chunk_larger_than_the_bank_waits_for_a_full_bank_and_leaves_a_debt() -> None:
    clock = Clock()
    bank = RateBank(clock)
    assert bank.wait(50_000, rate=1000) == BANK_S  # all the bank can hold, not 50 s
    clock.now += BANK_S
    bank.take(50_000, rate=1000)
    assert bank.wait(1000, rate=1000) == 41.0  # the debt is paid off before the next chunk
