"""ShardSpec validation (docs/design/consumer.md#shard-specs) and the names derived from a spec."""

from __future__ import annotations

import pytest
from google.protobuf.duration_pb2 import Duration

from gazette_core.broker.protocol.labels_ext import label_set
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol.shard_spec_ext import (
    backup_hint_keys,
    desired_replication,
    primary_hint_key,
    recovery_log,
    shard_labels,
    validate_shard_spec,
)
from gazette_core.errors import ValidationError
from tests.consumer.api.specs import shard


def test_valid_spec_passes() -> None:
    validate_shard_spec(shard())
    validate_shard_spec(shard("a/nested/shard", log_prefix="", hint_prefix="", hint_backups=0))


def test_derived_names() -> None:
    spec = shard("group/shard-1", log_prefix="logs/x", hint_prefix="/h/x", hint_backups=3)
    assert recovery_log(spec) == "logs/x/group/shard-1"
    assert recovery_log(shard(log_prefix="", hint_prefix="")) == ""
    assert primary_hint_key(spec) == "/h/x/group/shard-1.primary"
    assert backup_hint_keys(spec) == [
        "/h/x/group/shard-1.backup.0",
        "/h/x/group/shard-1.backup.1",
        "/h/x/group/shard-1.backup.2",
    ]
    assert backup_hint_keys(shard(hint_backups=0)) == []


def test_desired_replication() -> None:
    assert desired_replication(shard(hot_standbys=2), 3) == 3
    assert desired_replication(shard(hot_standbys=5), 3) == 4
    assert desired_replication(shard(hot_standbys=0), 3) == 1
    assert desired_replication(shard(hot_standbys=2, disable=True), 3) == 0


def test_shard_labels_add_id() -> None:
    spec = shard("shard-9", labels=(("zz", "1"), ("app", "x")))
    assert shard_labels(spec) == label_set(("app", "x"), ("id", "shard-9"), ("zz", "1"))


def _bad(spec: cpb.ShardSpec) -> str:
    with pytest.raises(ValidationError) as info:
        validate_shard_spec(spec)
    return str(info.value)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (shard("abc"), 'id: invalid length of "abc": expected 4 <= length <= 512 bytes (got 3)'),
        (
            shard("bad shard"),
            'id: invalid character " " at index 3 of "bad shard" '
            "(allowed: letters, numbers and -_+/.)",
        ),
        (
            shard(log_prefix="logs/", hint_prefix="/h"),
            'recovery_log_prefix: "logs//shard-000" must be a clean path (no "//", '
            'no "." or ".." segments, no trailing "/")',
        ),
        (
            shard(log_prefix="", hint_prefix="/h"),
            "hint_prefix: expected no hint_prefix when recovery_log_prefix is empty",
        ),
        (
            shard(hint_prefix="h/rel"),
            'hint_prefix: expected an absolute, clean path (got "h/rel")',
        ),
        (
            shard(hint_prefix="/h/../x"),
            'hint_prefix: expected an absolute, clean path (got "/h/../x")',
        ),
        (
            shard(hint_prefix="/h/"),
            'hint_prefix: expected an absolute, clean path (got "/h/")',
        ),
        (shard(hint_backups=-1), "hint_backups: expected hint_backups >= 0 (got -1)"),
        (
            shard(min_txn_duration=Duration(seconds=-1)),
            "min_txn_duration: expected min_txn_duration >= 0s (got -1s)",
        ),
        (
            shard(max_txn_duration=Duration()),
            "max_txn_duration: expected max_txn_duration > 0s (got 0s)",
        ),
        (
            shard(labels=(("id", "x"),)),
            'labels.labels[0].name: label name "id" is reserved',
        ),
        (
            shard(sources=("a/one", "bad//two")),
            'sources[1].journal: "bad//two" must be a clean path (no "//", no "." or ".." '
            'segments, no trailing "/")',
        ),
        (
            shard(sources=("b/two", "a/one")),
            'sources[1].journal: sources must be unique and sorted by journal: "b/two" '
            'is not before "a/one"',
        ),
        (
            shard(sources=("a/one", "a/one")),
            'sources[1].journal: sources must be unique and sorted by journal: "a/one" '
            'is not before "a/one"',
        ),
    ],
)
def test_invalid_specs(spec: cpb.ShardSpec, message: str) -> None:
    assert _bad(spec) == message


def test_negative_min_offset() -> None:
    spec = shard(sources=("a/one",))
    spec.sources[0].min_offset = -5
    assert _bad(spec) == "sources[0].min_offset: expected min_offset >= 0 (got -5)"


def test_checks_run_in_spec_order() -> None:
    # Both the id and the sources are wrong: the id is reported, as it comes first.
    spec = shard("abc", sources=("b/two", "a/one"), hint_backups=-1)
    assert _bad(spec).startswith("id: ")
    spec = shard(sources=("b/two", "a/one"), hint_backups=-1)
    assert _bad(spec).startswith("hint_backups: ")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"hint_backups": 65}, "hint_backups: expected hint_backups <= 64 (got 65)"),
        ({"hot_standbys": 1025}, "hot_standbys: expected hot_standbys <= 1024 (got 1025)"),
        ({"ring_buffer_size": (1 << 20) + 1},
         "ring_buffer_size: expected ring_buffer_size <= 1048576 (got 1048577)"),
        ({"read_channel_size": (1 << 20) + 1},
         "read_channel_size: expected read_channel_size <= 1048576 (got 1048577)"),
    ],
)
def test_counts_beyond_their_bounds(fields: dict[str, int], message: str) -> None:
    assert _bad(shard(**fields)) == message


def test_counts_at_their_bounds_pass() -> None:
    validate_shard_spec(shard(hint_backups=64, hot_standbys=1024, ring_buffer_size=1 << 20,
                              read_channel_size=1 << 20))


def test_backup_hint_keys_refuses_an_unbounded_count() -> None:
    # Never a list of 2^31 keys, whatever spec reaches it.
    with pytest.raises(ValidationError, match="expected hint_backups <= 64"):
        backup_hint_keys(shard(hint_backups=2147483647))
