"""Sequencer: each outcome row of its table, replays, offsets, pruning and seeding.

See docs/design/consumer.md#the-sequencer.
"""

from __future__ import annotations

import logging

import pytest

from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.message.interfaces import ZERO_UUID, Envelope
from gazette_core.message.sequencer import CLOCK_PER_SECOND, QueueOutcome, Sequencer
from tests.message.support import ACK, CONT, OUT, A, B, Log, Note, drain, texts

Q = QueueOutcome


async def commit(seq: Sequencer, env: Envelope, expect: QueueOutcome) -> list[str]:
    assert seq.queue_uncommitted(env) is expect
    return texts(await drain(seq))


async def test_outside_commit_is_handed_out_alone_then_offsets_move() -> None:
    log, seq = Log(), Sequencer()
    env = log.add(A, 50, OUT, "x")
    assert seq.queue_uncommitted(env) is Q.OUTSIDE_COMMIT
    assert seq.read_through() == {}  # Not before it was stepped through.
    assert await seq.step() and seq.dequeued is env
    assert not await seq.step() and seq.dequeued is None
    assert seq.read_through() == {log.journal: env.end}


async def test_outside_already_acked_is_ignored_and_offsets_move() -> None:
    log, seq = Log(), Sequencer()
    await commit(seq, log.add(A, 50, OUT), Q.OUTSIDE_COMMIT)
    for clock in (50, 40):
        env = log.add(A, clock, OUT)
        assert seq.queue_uncommitted(env) is Q.OUTSIDE_ALREADY_ACKED
        assert not await seq.step()
        assert seq.read_through() == {log.journal: env.end}


async def test_outside_commit_discards_an_open_span_with_an_error(
        caplog: pytest.LogCaptureFixture) -> None:
    log, seq = Log(), Sequencer()
    assert seq.queue_uncommitted(log.add(A, 50, CONT, "pending")) is Q.CONTINUE_BEGIN_SPAN
    with caplog.at_level(logging.ERROR):
        assert await commit(seq, log.add(A, 60, OUT, "out"), Q.OUTSIDE_COMMIT) == ["out"]
    assert "mixes committed and uncommitted" in caplog.text
    assert await commit(seq, log.add(A, 70, ACK, "ack"), Q.ACK_EMPTY) == ["ack"]


async def test_continue_rows_begin_extend_duplicate_and_already_acked() -> None:
    log, seq = Log(), Sequencer()
    first = log.add(A, 50, CONT)
    assert seq.queue_uncommitted(first) is Q.CONTINUE_BEGIN_SPAN
    assert seq.queue_uncommitted(log.add(A, 60, CONT)) is Q.CONTINUE_EXTEND_SPAN
    assert seq.queue_uncommitted(log.add(A, 60, CONT)) is Q.CONTINUE_TXN_CLOCK_LARGER
    assert seq.queue_uncommitted(log.add(A, 55, CONT)) is Q.CONTINUE_TXN_CLOCK_LARGER
    last = log.add(A, 49, CONT)  # A first seen at 50 starts at 49: already acked.
    assert seq.queue_uncommitted(last) is Q.CONTINUE_ALREADY_ACKED
    # Pending and ignored messages move offsets at once.
    assert seq.read_through() == {log.journal: last.end}
    assert await commit(seq, log.add(A, 60, ACK, "ack"), Q.ACK_COMMIT_RING) == [
        "01aa@50", "01aa@60", "ack"]
    assert seq.queue_uncommitted(log.add(A, 60, CONT)) is Q.CONTINUE_ALREADY_ACKED


async def test_ack_commit_ring_emits_up_to_its_clock_and_rolls_back_the_rest() -> None:
    log, seq = Log(), Sequencer()
    for env in (log.add(A, 10, CONT), log.add(B, 11, CONT), log.add(A, 12, CONT),
                log.add(A, 30, CONT)):
        seq.queue_uncommitted(env)
    ack = log.add(A, 20, ACK, "ack")
    assert seq.queue_uncommitted(ack) is Q.ACK_COMMIT_RING
    before = seq.read_through()[log.journal]
    assert before == ack.begin
    handed: list[str] = []
    while await seq.step():
        handed.append(seq.dequeued.message.text)  # type: ignore[union-attr]
        # The ACK's offset is passed only once its whole sequence was dequeued.
        assert seq.read_through()[log.journal] == before
    assert handed == ["01aa@10", "01aa@12", "ack"]
    assert seq.read_through()[log.journal] == ack.end
    # A@30 was rolled back; B's span is untouched and commits on its own ACK.
    assert await commit(seq, log.add(A, 40, ACK, "ack2"), Q.ACK_EMPTY) == ["ack2"]
    assert await commit(seq, log.add(B, 11, ACK, "b-ack"), Q.ACK_COMMIT_RING) == [
        "01bb@11", "b-ack"]


async def test_ack_empty_is_emitted() -> None:
    log, seq = Log(), Sequencer()
    assert await commit(seq, log.add(A, 10, ACK, "ack"), Q.ACK_EMPTY) == ["ack"]


async def test_duplicate_ack_rolls_back_the_open_span() -> None:
    log, seq = Log(), Sequencer()
    await commit(seq, log.add(A, 10, ACK), Q.ACK_EMPTY)
    seq.queue_uncommitted(log.add(A, 11, CONT, "from a failed transaction"))
    dup = log.add(A, 10, ACK)
    assert seq.queue_uncommitted(dup) is Q.ACK_ROLLBACK
    assert not await seq.step()
    assert seq.read_through() == {log.journal: dup.end}
    assert await commit(seq, log.add(A, 12, ACK, "next"), Q.ACK_EMPTY) == ["next"]


async def test_ack_below_last_ack_logs_and_degrades_to_at_least_once(
        caplog: pytest.LogCaptureFixture) -> None:
    log, seq = Log(), Sequencer()
    seq.queue_uncommitted(log.add(A, 10, CONT))
    await commit(seq, log.add(A, 20, ACK), Q.ACK_COMMIT_RING)
    with caplog.at_level(logging.ERROR):
        assert seq.queue_uncommitted(log.add(A, 15, ACK)) is Q.ACK_ROLLBACK
    assert "went backwards" in caplog.text
    # The producer re-sends what followed its older checkpoint: processed again.
    assert seq.queue_uncommitted(log.add(A, 16, CONT, "again")) is Q.CONTINUE_BEGIN_SPAN
    assert await commit(seq, log.add(A, 17, ACK, "ack"), Q.ACK_COMMIT_RING) == ["again", "ack"]


async def test_ack_commit_replay_reads_the_span_before_the_ring_and_drops_duplicates() -> None:
    log, seq = Log(), Sequencer(ring_size=2)
    spans = [log.add(A, c, CONT) for c in (10, 11)]
    log.add(B, 5, CONT)  # Another producer in the replayed range.
    log.add(A, 11, CONT)  # A duplicate (a retried append) of A@11.
    for env in log.envelopes:
        seq.queue_uncommitted(env)
    in_ring = [log.add(A, c, CONT) for c in (12, 13)]
    for env in in_ring:
        seq.queue_uncommitted(env)
    ack = log.add(A, 13, ACK, "ack")
    assert seq.queue_uncommitted(ack) is Q.ACK_COMMIT_REPLAY
    assert seq.replay_range() == (log.journal, spans[0].begin, in_ring[0].begin)

    async def replay() -> object:
        for env in log.between(spans[0].begin, in_ring[0].begin):
            yield env

    seq.start_replay(replay())  # type: ignore[arg-type]
    assert texts(await drain(seq)) == ["01aa@10", "01aa@11", "01aa@12", "01aa@13", "ack"]


async def test_replay_to_the_ack_when_no_span_message_is_left_in_the_ring() -> None:
    log, seq = Log(), Sequencer(ring_size=1)
    first = log.add(A, 10, CONT)
    for env in (first, log.add(B, 10, CONT)):  # B evicts A's only ring slot.
        seq.queue_uncommitted(env)
    ack = log.add(A, 10, ACK, "ack")
    assert seq.queue_uncommitted(ack) is Q.ACK_COMMIT_REPLAY
    assert seq.replay_range() == (log.journal, first.begin, ack.begin)
    with pytest.raises(RuntimeError, match="start_replay"):
        await seq.step()
    seq.start_replay(log.between(first.begin, ack.begin))
    assert texts(await drain(seq)) == ["01aa@10", "ack"]


async def test_zero_uuid_messages_commit_at_once_untracked() -> None:
    log, seq = Log(), Sequencer()
    env = Envelope(log.journal, 0, 7, Note(text="no uuid"))
    assert env.message.get_uuid() == ZERO_UUID
    assert await commit(seq, env, Q.OUTSIDE_COMMIT) == ["no uuid"]
    assert await commit(seq, env, Q.OUTSIDE_COMMIT) == ["no uuid"]  # At-least-once.
    assert list(seq.checkpoint().sources[log.journal].producers) == []


async def test_queueing_before_a_sequence_is_stepped_through_is_refused() -> None:
    log, seq = Log(), Sequencer()
    seq.queue_uncommitted(log.add(A, 10, OUT))
    with pytest.raises(RuntimeError, match="step"):
        seq.queue_uncommitted(log.add(A, 11, OUT))


async def test_checkpoint_mid_sequence_resumes_with_the_rest_after_a_restart() -> None:
    log, seq = Log(), Sequencer()
    for c in (10, 11, 12):
        seq.queue_uncommitted(log.add(A, c, CONT))
    ack = log.add(A, 12, ACK, "ack")
    assert seq.queue_uncommitted(ack) is Q.ACK_COMMIT_RING
    assert await seq.step() and await seq.step()  # A@10 consumed, A@11 handed out.
    cp = seq.checkpoint()
    src = cp.sources[log.journal]
    assert src.read_through == ack.begin
    assert [(p.id, p.state.last_ack, p.state.begin) for p in src.producers] == [
        (A, 10, log.envelopes[0].end)]

    restarted = Sequencer(cpb.Checkpoint.FromString(cp.SerializeToString()))
    assert restarted.read_through() == {log.journal: ack.begin}
    assert restarted.queue_uncommitted(ack) is Q.ACK_COMMIT_REPLAY
    assert restarted.replay_range() == (log.journal, log.envelopes[0].end, ack.begin)
    restarted.start_replay(log.between(log.envelopes[0].end, ack.begin))
    assert texts(await drain(restarted)) == ["01aa@11", "01aa@12", "ack"]
    assert restarted.read_through() == {log.journal: ack.end}


async def test_seeded_producers_filter_acked_messages_and_replay_open_spans() -> None:
    log = Log()
    old = [log.add(A, 10, CONT), log.add(B, 30, OUT)]
    cp = cpb.Checkpoint()
    cp.sources[log.journal].read_through = log.offset
    cp.sources[log.journal].producers.add(id=A).state.CopyFrom(
        cpb.Checkpoint.ProducerState(last_ack=9, begin=old[0].begin))
    cp.sources[log.journal].producers.add(id=B).state.CopyFrom(
        cpb.Checkpoint.ProducerState(last_ack=30, begin=-1))
    seq = Sequencer(cp)
    assert seq.queue_uncommitted(log.add(B, 30, OUT)) is Q.OUTSIDE_ALREADY_ACKED
    assert seq.queue_uncommitted(log.add(A, 11, CONT)) is Q.CONTINUE_EXTEND_SPAN
    ack = log.add(A, 11, ACK, "ack")
    assert seq.queue_uncommitted(ack) is Q.ACK_COMMIT_REPLAY
    assert seq.replay_range() == (log.journal, old[0].begin, log.envelopes[-2].begin)
    seq.start_replay(log.between(old[0].begin, log.envelopes[-2].begin))
    assert texts(await drain(seq)) == ["01aa@10", "01aa@11", "ack"]


async def test_has_pending_tracks_spans_started_or_extended_since_the_checkpoint() -> None:
    log, seq = Log(), Sequencer()
    assert not seq.has_pending()
    seq.queue_uncommitted(log.add(A, 10, CONT))
    assert seq.has_pending()
    seq.checkpoint()
    assert not seq.has_pending()
    seq.queue_uncommitted(log.add(A, 11, CONT))
    assert seq.has_pending()
    await commit(seq, log.add(A, 11, ACK), Q.ACK_COMMIT_RING)
    assert not seq.has_pending()


async def test_checkpoint_prunes_producers_older_than_the_horizon_per_journal() -> None:
    day = 86400 * CLOCK_PER_SECOND
    one, other = Log("a/one"), Log("a/other")
    seq = Sequencer()
    for env in (one.add(A, 1000, OUT), one.add(B, 1000 + day + 1, OUT),
                other.add(A, 1000, OUT)):
        await commit(seq, env, Q.OUTSIDE_COMMIT)
    cp = seq.checkpoint(horizon_s=86400)
    assert [p.id for p in cp.sources["a/one"].producers] == [B]  # A is a day behind B.
    assert [p.id for p in cp.sources["a/other"].producers] == [A]  # Newest of its journal.
    assert cp.sources["a/one"].read_through == one.offset
    # A pruned producer is new again: its old messages are no longer recognised.
    assert seq.queue_uncommitted(one.add(A, 1000, OUT)) is Q.OUTSIDE_COMMIT
