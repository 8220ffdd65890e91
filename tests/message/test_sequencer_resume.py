"""Sequencer.resume_offset: where a reader keeping only an offset starts again, and
rollbacks seen by a reader that began after the producer's last ACK."""

from __future__ import annotations

import logging

import pytest

from gazette_core.message.interfaces import Envelope
from gazette_core.message.sequencer import QueueOutcome, Sequencer
from tests.message.support import ACK, CONT, OUT, A, B, Log, drain, texts

C = bytes([0x01, 0xCC, 0, 0, 0, 3])


async def handed_out(envelopes: list[Envelope]) -> list[str]:
    """What a fresh Sequencer hands out of `envelopes`, ACKs left out."""
    seq, out = Sequencer(), []
    for env in envelopes:
        seq.queue_uncommitted(env)
        out += await drain(seq)
    return [text for text in texts(out) if "ack" not in text]


def a_journal() -> Log:
    """Transactions with a duplicate and a rollback; no message commits inside another's."""
    log = Log()
    log.add(B, 1, OUT, "b1")
    log.add(A, 10, CONT, "a1")
    log.add(A, 11, CONT, "a2")
    log.add(A, 11, CONT, "a2")  # a retried append
    log.add(A, 12, ACK, "ack-a")
    log.add(C, 20, OUT, "c1")
    log.add(C, 30, ACK, "ack-c")
    log.add(C, 31, CONT, "rolled back")
    log.add(C, 30, ACK, "ack-c rollback")
    log.add(A, 13, CONT, "a3")
    log.add(A, 14, ACK, "ack-a2")
    log.add(B, 2, OUT, "b2")
    return log


async def test_a_read_resumed_at_any_message_hands_out_exactly_the_rest() -> None:
    log = a_journal()
    everything = await handed_out(log.envelopes)
    assert everything == ["b1", "a1", "a2", "c1", "a3", "b2"]
    for stop in range(len(everything)):
        seq, handed = Sequencer(), []
        for env in log.envelopes:
            seq.queue_uncommitted(env)
            while len(handed) < stop and await seq.step():
                assert seq.dequeued is not None
                if "ack" not in seq.dequeued.message.text:  # type: ignore[attr-defined]
                    handed.append(seq.dequeued.message.text)  # type: ignore[attr-defined]
            if len(handed) == stop:
                break
        at = seq.resume_offset(log.journal, 100, consumed=True)
        rest = await handed_out([e for e in log.envelopes if e.begin >= at])
        assert handed + rest == everything, (stop, at)


async def test_without_open_transactions_it_is_the_read_through_offset() -> None:
    log, seq = Log(), Sequencer()
    assert seq.resume_offset(log.journal, 100) == 100  # nothing read yet
    for env in (log.add(A, 10, CONT), log.add(A, 11, ACK), log.add(B, 5, OUT)):
        seq.queue_uncommitted(env)
        await drain(seq)
    assert seq.resume_offset(log.journal, 100) == log.envelopes[-1].end


async def test_an_open_transaction_keeps_its_first_message() -> None:
    log, seq = Log(), Sequencer()
    first = log.add(A, 10, CONT)
    for env in (first, log.add(B, 5, OUT), log.add(A, 11, CONT)):
        seq.queue_uncommitted(env)
        await drain(seq)
    assert seq.resume_offset(log.journal, 100) == first.begin


async def test_in_a_sequence_it_follows_what_the_caller_used() -> None:
    log, seq = Log(), Sequencer()
    a1, a2 = log.add(A, 10, CONT), log.add(A, 11, CONT)
    for env in (a1, a2, log.add(A, 12, ACK)):
        seq.queue_uncommitted(env)
    assert await seq.step() and seq.dequeued is a1
    assert (seq.resume_offset(log.journal, 100, consumed=False),
            seq.resume_offset(log.journal, 100, consumed=True)) == (a1.begin, a1.end)
    assert await seq.step() and seq.dequeued is a2
    assert (seq.resume_offset(log.journal, 100, consumed=False),
            seq.resume_offset(log.journal, 100, consumed=True)) == (a1.end, a2.end)


async def test_in_a_sequence_an_earlier_open_transaction_comes_first() -> None:
    log, seq = Log(), Sequencer()
    other = log.add(B, 5, CONT)
    for env in (other, log.add(A, 10, CONT), log.add(A, 12, ACK)):
        seq.queue_uncommitted(env)
    assert await seq.step()
    assert seq.resume_offset(log.journal, 100, consumed=True) == other.begin


async def test_an_outside_message_being_handed_out_is_kept_until_used() -> None:
    log, seq = Log(), Sequencer()
    env = log.add(A, 10, OUT)
    seq.queue_uncommitted(env)
    assert await seq.step() and seq.dequeued is env
    assert (seq.resume_offset(log.journal, 100, consumed=False),
            seq.resume_offset(log.journal, 100, consumed=True)) == (env.begin, env.end)


async def test_a_rollback_below_a_guessed_last_ack_is_no_error(
        caplog: pytest.LogCaptureFixture) -> None:
    """A read that began after A's last ACK guesses it from A's first message."""
    log, seq = Log(), Sequencer()
    seq.queue_uncommitted(log.add(A, 50, CONT, "from a failed transaction"))
    with caplog.at_level(logging.ERROR):
        assert seq.queue_uncommitted(log.add(A, 20, ACK)) is QueueOutcome.ACK_ROLLBACK
    assert caplog.text == ""
    assert not await seq.step()
