"""Journal names and labels of the stream-sum example."""

from __future__ import annotations

CHUNKS_PREFIX = "examples/stream-sum/chunks/"
SUMS_JOURNAL = "examples/stream-sum/sums"
RECOVERY_LOG_PREFIX = "examples/stream-sum/recovery-logs"
PARTITIONS = 8
MESSAGE_TYPE = "app.gazette.dev/message-type"
CHUNK_TYPE = "Chunk"
SUM_TYPE = "Sum"
NDJSON = "application/x-ndjson"
CHUNK_SIZE = 32


def partition(index: int) -> str:
    return f"{CHUNKS_PREFIX}part-{index:03d}"
