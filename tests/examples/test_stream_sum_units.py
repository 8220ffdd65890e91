"""Stream-sum pieces on their own: the CRC-64/ECMA, the chunker's tally, the shard YAML."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from examples.specs import load_shards
from examples.stream_sum import crc64
from examples.stream_sum.names import PARTITIONS, partition
from examples.stream_sum.tally import Tally
from gazette_core.errors import ValidationError

EXAMPLE = Path(__file__).parents[2] / "examples" / "stream_sum"


def test_crc64_matches_go_ecma_check_values() -> None:
    # Go: crc64.Checksum(data, crc64.MakeTable(crc64.ECMA)).
    assert crc64.checksum(b"") == 0
    assert crc64.checksum(b"123456789") == 0x995DC9BBDF1939FA
    assert crc64.checksum(b"a") == 0x330284772E652B05


def test_crc64_runs_across_chunks() -> None:
    data = random.Random(7).randbytes(32 * 9)
    running = 0
    for i in range(0, len(data), 32):
        running = crc64.update(running, data[i:i + 32])
    assert running == crc64.checksum(data)


def _tally(streams: dict[str, list[bytes]]) -> Tally:
    tally = Tally()
    for stream, chunks in streams.items():
        for data in [*chunks, b""]:
            tally.sent(stream, data)
    return tally


def test_tally_verifies_each_sum_once() -> None:
    tally = _tally({"a": [b"x" * 32, b"y" * 32], "b": [b"z" * 32]})
    tally.observe("a", 3, crc64.checksum(b"x" * 32 + b"y" * 32))
    tally.observe("other-run", 1, 0)  # not ours: ignored
    assert tally.summary() == {"streams": 2, "verified": 1, "wrong": 0, "duplicated": 0,
                               "missing": 1}
    tally.observe("b", 2, crc64.checksum(b"z" * 32))
    tally.observe("b", 2, crc64.checksum(b"z" * 32))
    tally.observe("a", 3, 12345)
    assert tally.summary() == {"streams": 2, "verified": 2, "wrong": 0, "duplicated": 2,
                               "missing": 0}


def test_tally_counts_wrong_values_and_lengths() -> None:
    tally = _tally({"a": [b"x" * 32], "b": [b"y" * 32]})
    tally.observe("a", 2, crc64.checksum(b"q" * 32))
    tally.observe("b", 3, crc64.checksum(b"y" * 32))
    assert tally.summary() == {"streams": 2, "verified": 0, "wrong": 2, "duplicated": 0,
                               "missing": 0}


def test_example_shards_push_down_common_fields() -> None:
    specs = load_shards((EXAMPLE / "shards.yaml").read_text())
    assert [s.id for s in specs] == [f"chunks-part-{i:03d}" for i in range(PARTITIONS)]
    assert [s.sources[0].journal for s in specs] == [partition(i) for i in range(PARTITIONS)]
    assert {s.hot_standbys for s in specs} == {1}
    assert {s.recovery_log_prefix for s in specs} == {"examples/stream-sum/recovery-logs"}
    stores = [[(lb.name, lb.value) for lb in s.labels.labels] for s in specs]
    assert stores == [[("store", "sqlite")]] * 4 + [[("store", "json")]] * 4


def test_shard_yaml_is_validated() -> None:
    text = "common: {max_txn_duration: 1s}\nshards:\n  - id: ab\n"
    with pytest.raises(ValidationError, match="id"):
        load_shards(text)
