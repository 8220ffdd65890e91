"""Prometheus metrics of shards, served at `/metrics` on the consumer's HTTP port.

They live in prometheus_client's default registry beside the broker client's
counters. Series are labelled by shard (and by source journal for lag), as
Gazette's are; the transaction loop only ever increments or observes.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

TXN = Counter("gazette_shard_txn", "Transactions committed by shard primaries.", ["shard"])
MESSAGES = Counter("gazette_shard_messages",
                   "Messages consumed (ACKs included) by shard primaries.", ["shard"])
BYTES = Counter("gazette_shard_bytes", "Bytes of messages consumed by shard primaries.",
                ["shard"])
TXN_SECONDS = Histogram(
    "gazette_shard_txn_duration_seconds",
    "Duration of shard transactions, from the first message to the commit's start.",
    ["shard"], buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
READ_LAG = Gauge("gazette_shard_read_lag_bytes",
                 "Write head of a source journal minus the shard's read_through.",
                 ["shard", "journal"])
RECOVERY_READ = Gauge("gazette_shard_recovery_read_bytes",
                      "Bytes of the recovery log played back by a shard replica.", ["shard"])
RECOVERY_TARGET = Gauge("gazette_shard_recovery_target_bytes",
                        "Bytes of the recovery log a replica plays before it is ready.",
                        ["shard"])


def committed(shard: str, messages: int, size: int, seconds: float) -> None:
    """Record one committed transaction of `shard`."""
    TXN.labels(shard).inc()
    MESSAGES.labels(shard).inc(messages)
    BYTES.labels(shard).inc(size)
    TXN_SECONDS.labels(shard).observe(seconds)


def recovery(shard: str, read: int, target: int) -> None:
    RECOVERY_READ.labels(shard).set(read)
    RECOVERY_TARGET.labels(shard).set(target)


def forget_recovery(shard: str) -> None:
    """Drop the playback gauges of a shard that is no longer playing back here."""
    for gauge in (RECOVERY_READ, RECOVERY_TARGET):
        try:
            gauge.remove(shard)
        except KeyError:
            pass


def forget(shard: str, journals: list[str]) -> None:
    """Drop the gauges of a shard no longer served here, so they don't linger stale."""
    forget_recovery(shard)
    for journal in journals:
        try:
            READ_LAG.remove(shard, journal)
        except KeyError:
            pass
