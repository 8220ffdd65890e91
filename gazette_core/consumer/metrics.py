"""Prometheus metrics of shards, served at `/metrics` on the consumer's HTTP port.

Go's names, counted once a transaction fully completed (its commit and its
ACK appends resolved), as Go counts them:

- `gazette_shard_transactions_total`, `gazette_shard_read_messages_total`,
  `gazette_shard_read_bytes_total` `{shard}`: transactions, and the messages
  and message bytes they consumed.
- `gazette_shard_read_head{shard,journal}`: the offset a transaction read
  each source journal through.
- `gazette_shard_phase_seconds_total{shard,phase,type}`: seconds spent in each
  phase of transactions: `10-not-running` (since the previous one finished
  preparing), `20-consuming`, `30-stalled` (ready to commit but for the
  previous transaction's commit), `40-preparing` (finalize_txn, the
  checkpoint, starting the store's commit), all `sync`; `50-committing`
  and `60-acknowledging` (the ACK appends), `async`.
- The older process-wide forms: `gazette_consumer_tx_count_total`,
  `..._tx_messages_total`, `..._tx_seconds_total` (first message to the
  commit resolving), `..._tx_consume_seconds_total`,
  `..._tx_stalled_seconds_total`, `..._tx_flush_seconds_total`
  (preparing), `..._tx_sync_seconds_total` (committing),
  `gazette_consumer_consumed_bytes_total` (Go adds these per message read,
  we per transaction) and `gazette_consumer_read_head{journal}`.

Beside them our own, by shard: transactions, messages and bytes under our
older names (the same counts), transaction durations (first message to the
commit's start), read lag of primaries and playback of replicas (sampled
by `gauges.py`). The sequencer's and recovery log's metrics are in
`message/metrics.py` and `recoverylog/player.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gazette_core.metrics.families import Cell, Counter, Gauge, Histogram

if TYPE_CHECKING:
    from gazette_core.consumer.txn.loop import TxnStats

PHASES = (("10-not-running", "sync"), ("20-consuming", "sync"), ("30-stalled", "sync"),
          ("40-preparing", "sync"), ("50-committing", "async"), ("60-acknowledging", "async"))

TRANSACTIONS = Counter("gazette_shard_transactions_total",
                       "Transactions completed by shard primaries.", ("shard",))
READ_MESSAGES = Counter("gazette_shard_read_messages_total",
                        "Messages consumed by completed transactions.", ("shard",))
READ_BYTES = Counter("gazette_shard_read_bytes_total",
                     "Bytes of the messages consumed by completed transactions.", ("shard",))
READ_HEAD = Gauge("gazette_shard_read_head",
                  "Offset of a source journal that a shard's last transaction read through.",
                  ("shard", "journal"))
PHASE_SECONDS = Counter("gazette_shard_phase_seconds_total",
                        "Seconds spent in each phase of shard transactions.",
                        ("shard", "phase", "type"))
TX_COUNT = Counter("gazette_consumer_tx_count_total",
                   "Transactions completed (all shards).").cell()
TX_MESSAGES = Counter("gazette_consumer_tx_messages_total",
                      "Messages consumed by completed transactions (all shards).").cell()
TX_SECONDS = Counter("gazette_consumer_tx_seconds_total",
                     "Seconds from transactions' first message to their commit.").cell()
TX_CONSUME_SECONDS = Counter("gazette_consumer_tx_consume_seconds_total",
                             "Seconds transactions spent consuming messages.").cell()
TX_STALLED_SECONDS = Counter("gazette_consumer_tx_stalled_seconds_total",
                             "Seconds transactions waited on the previous one's commit.").cell()
TX_FLUSH_SECONDS = Counter("gazette_consumer_tx_flush_seconds_total",
                           "Seconds transactions spent preparing their commit.").cell()
TX_SYNC_SECONDS = Counter("gazette_consumer_tx_sync_seconds_total",
                          "Seconds transactions waited for their commit to resolve.").cell()
CONSUMED_BYTES = Counter("gazette_consumer_consumed_bytes_total",
                         "Bytes of messages consumed by completed transactions.").cell()
CONSUMER_READ_HEAD = Gauge("gazette_consumer_read_head",
                           "Offset of a source journal that the last transaction read through.",
                           ("journal",))

TXN = Counter("gazette_shard_txn_total", "Transactions committed by shard primaries.",
              ("shard",))
MESSAGES = Counter("gazette_shard_messages_total",
                   "Messages consumed (ACKs included) by shard primaries.", ("shard",))
BYTES = Counter("gazette_shard_bytes_total", "Bytes of messages consumed by shard primaries.",
                ("shard",))
TXN_SECONDS = Histogram(
    "gazette_shard_txn_duration_seconds",
    "Duration of shard transactions, from the first message to the commit's start.",
    ("shard",), buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
READ_LAG = Gauge("gazette_shard_read_lag_bytes",
                 "Write head of a source journal minus the shard's read_through.",
                 ("shard", "journal"))
RECOVERY_READ = Gauge("gazette_shard_recovery_read_bytes",
                      "Bytes of the recovery log played back by a shard replica.", ("shard",))
RECOVERY_TARGET = Gauge("gazette_shard_recovery_target_bytes",
                        "Bytes of the recovery log a replica plays before it is ready.",
                        ("shard",))


class _ShardSeries:
    """The per-shard series a completed transaction moves, looked up once per shard."""

    def __init__(self, shard: str) -> None:
        self.shard = shard
        self.counts = [family.cell(shard) for family in (
            TRANSACTIONS, READ_MESSAGES, READ_BYTES, TXN, MESSAGES, BYTES)]
        self.seconds = TXN_SECONDS.cell(shard)
        self.phases = [PHASE_SECONDS.cell(shard, phase, kind) for phase, kind in PHASES]
        self.heads: dict[str, tuple[Cell, Cell]] = {}

    def head(self, journal: str) -> tuple[Cell, Cell]:
        cells = self.heads.get(journal)
        if cells is None:
            cells = self.heads[journal] = (READ_HEAD.cell(self.shard, journal),
                                           CONSUMER_READ_HEAD.cell(journal))
        return cells


_shards: dict[str, _ShardSeries] = {}


def committed(stats: TxnStats) -> None:
    """Record one completed transaction."""
    series = _shards.get(stats.shard)
    if series is None:
        series = _shards[stats.shard] = _ShardSeries(stats.shard)
    for cell, add in zip(series.counts, (1, stats.messages, stats.bytes) * 2, strict=True):
        cell.value += add
    series.seconds.observe(stats.duration_s)
    for cell, seconds in zip(series.phases, stats.phases, strict=True):
        cell.value += seconds
    for journal, offset in stats.read_through.items():
        shard_head, process_head = series.head(journal)
        shard_head.value = process_head.value = offset
    _, consuming, stalled, preparing, committing, _ = stats.phases
    TX_COUNT.value += 1
    TX_MESSAGES.value += stats.messages
    TX_SECONDS.value += consuming + stalled + preparing + committing
    TX_CONSUME_SECONDS.value += consuming
    TX_STALLED_SECONDS.value += stalled
    TX_FLUSH_SECONDS.value += preparing
    TX_SYNC_SECONDS.value += committing
    CONSUMED_BYTES.value += stats.bytes


def recovery(shard: str, read: int, target: int) -> None:
    RECOVERY_READ.cell(shard).value = read
    RECOVERY_TARGET.cell(shard).value = target


def forget_recovery(shard: str) -> None:
    """Drop the playback gauges of a shard that is no longer playing back here."""
    RECOVERY_READ.remove(shard)
    RECOVERY_TARGET.remove(shard)


def forget(shard: str, journals: list[str]) -> None:
    """Drop the gauges of a shard no longer served here, so they don't linger stale."""
    forget_recovery(shard)
    for journal in journals:
        READ_LAG.remove(shard, journal)
