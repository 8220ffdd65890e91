"""Journal names and labels of the word-count example."""

from __future__ import annotations

DELTAS_PREFIX = "examples/word-count/deltas/"
RECOVERY_LOG_PREFIX = "examples/word-count/recovery-logs"
PARTITIONS = 4
MESSAGE_TYPE = "app.gazette.dev/message-type"
NGRAM_TYPE = "NGramCount"


def partition(index: int) -> str:
    return f"{DELTAS_PREFIX}part-{index:03d}"


def shard_of(index: int) -> str:
    return f"deltas-part-{index:03d}"
