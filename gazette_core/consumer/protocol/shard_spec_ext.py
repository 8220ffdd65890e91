"""ShardSpec validation and the names derived from a spec.

Validation follows the order of docs/design/consumer.md#shard-specs,
raising ValidationError with the dotted field path from the spec root
(`sources[1].journal`), as the broker's `validate_journal_spec` does. The
derived names (recovery log, hint keys) and the label set selectors see
(labels plus a synthetic `id`) live here too, so the API, the runtime and
gazctl agree on them.
"""

from __future__ import annotations

import posixpath

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.durations_ext import format_duration, to_nanos, validate_duration
from gazette_core.broker.protocol.labels_ext import label_set_from
from gazette_core.broker.protocol.names_ext import quote, validate_journal_name, validate_token
from gazette_core.broker.protocol.validate_header_ext import validate_process_spec
from gazette_core.broker.protocol.validate_spec_ext import validate_spec_labels, within
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.errors import ValidationError

MIN_SHARD_ID_LEN, MAX_SHARD_ID_LEN = 4, 512
# The synthetic label selectors match a shard's id against; never stored in a spec.
META_ID = "id"
DEFAULT_MAX_HOT_STANDBYS = 3
DEFAULT_RING_BUFFER_SIZE = 1 << 13
DEFAULT_READ_CHANNEL_SIZE = 1 << 13
# Upper bounds of the spec's count fields (see docs/consumers.md, "Bounds"). A
# consumer allocates in proportion to each, so a spec beyond them is refused at
# Apply and ignored (with a logged error) when found stored in Etcd.
# Each backup slot is one operation of the Etcd transactions that read and
# rotate hints, which Etcd caps at 128 (--max-txn-ops) with the primary key.
MAX_HINT_BACKUPS = 64
# Each standby is a full replica on another consumer process.
MAX_HOT_STANDBYS = 1024
# Slots of buffered messages: 128 times the default of 8192.
MAX_RING_BUFFER_SIZE = 1 << 20
MAX_READ_CHANNEL_SIZE = 1 << 20


def validate_shard_id(shard: str, path: str = "id") -> None:
    """A token (letters, digits and `-_+/.`) of 4..512 bytes."""
    validate_token(shard, MIN_SHARD_ID_LEN, MAX_SHARD_ID_LEN, path)


def recovery_log(spec: cpb.ShardSpec) -> str:
    """`{recovery_log_prefix}/{id}`, or "" when the shard has no recovery log."""
    if not spec.recovery_log_prefix:
        return ""
    return f"{spec.recovery_log_prefix}/{spec.id}"


def primary_hint_key(spec: cpb.ShardSpec) -> str:
    """Etcd key of the primary's FSMHints: `{hint_prefix}/{id}.primary`."""
    return f"{spec.hint_prefix}/{spec.id}.primary"


def backup_hint_keys(spec: cpb.ShardSpec) -> list[str]:
    """Etcd keys of the backup FSMHints, newest (`.backup.0`) first."""
    _check_bound(spec, "hint_backups", 0, MAX_HINT_BACKUPS)  # never a list of 2^31 keys
    return [f"{spec.hint_prefix}/{spec.id}.backup.{i}" for i in range(spec.hint_backups)]


def desired_replication(spec: cpb.ShardSpec, max_hot_standbys: int) -> int:
    """0 when disabled, else the primary plus up to `max_hot_standbys` standbys."""
    if spec.disable:
        return 0
    return 1 + min(spec.hot_standbys, max_hot_standbys)


def shard_labels(spec: cpb.ShardSpec) -> pb.LabelSet:
    """The spec's labels plus `id=<shard id>`, as selectors and claims see a shard."""
    kept = [label for label in spec.labels.labels if label.name != META_ID]
    return label_set_from([*kept, pb.Label(name=META_ID, value=spec.id)])


def _is_clean_absolute(value: str) -> bool:
    # posixpath.normpath keeps a leading "//", which Go's path.Clean folds to "/".
    return value.startswith("/") and not value.startswith("//") and (
        posixpath.normpath(value) == value
    )


def _validate_hints_config(spec: cpb.ShardSpec) -> None:
    if spec.recovery_log_prefix:
        validate_journal_name(recovery_log(spec), "recovery_log_prefix")
    elif spec.hint_prefix:
        raise ValidationError(
            "hint_prefix", "expected no hint_prefix when recovery_log_prefix is empty"
        )
    if spec.recovery_log_prefix and not _is_clean_absolute(spec.hint_prefix):
        raise ValidationError(
            "hint_prefix",
            f"expected an absolute, clean path (got {quote(spec.hint_prefix)})",
        )
    _check_bound(spec, "hint_backups", 0, MAX_HINT_BACKUPS)


def _check_bound(spec: cpb.ShardSpec, field: str, low: int, high: int) -> None:
    value = getattr(spec, field)
    if value < low:
        raise ValidationError(field, f"expected {field} >= {low} (got {value})")
    if value > high:
        raise ValidationError(field, f"expected {field} <= {high} (got {value})")


def _validate_sizes(spec: cpb.ShardSpec) -> None:
    _check_bound(spec, "hot_standbys", 0, MAX_HOT_STANDBYS)
    _check_bound(spec, "ring_buffer_size", 0, MAX_RING_BUFFER_SIZE)
    _check_bound(spec, "read_channel_size", 0, MAX_READ_CHANNEL_SIZE)


def _validate_durations(spec: cpb.ShardSpec) -> None:
    validate_duration(spec.min_txn_duration, "min_txn_duration")
    validate_duration(spec.max_txn_duration, "max_txn_duration")
    if to_nanos(spec.min_txn_duration) < 0:
        raise ValidationError(
            "min_txn_duration",
            f"expected min_txn_duration >= 0s (got {format_duration(spec.min_txn_duration)})",
        )
    if to_nanos(spec.max_txn_duration) <= 0:
        raise ValidationError(
            "max_txn_duration",
            f"expected max_txn_duration > 0s (got {format_duration(spec.max_txn_duration)})",
        )


def _validate_sources(spec: cpb.ShardSpec) -> None:
    for index, source in enumerate(spec.sources):
        path = f"sources[{index}]"
        validate_journal_name(source.journal, f"{path}.journal")
        if source.min_offset < 0:
            raise ValidationError(
                f"{path}.min_offset", f"expected min_offset >= 0 (got {source.min_offset})"
            )
        if index and spec.sources[index - 1].journal >= source.journal:
            raise ValidationError(
                f"{path}.journal",
                f"sources must be unique and sorted by journal: "
                f"{quote(spec.sources[index - 1].journal)} is not before {quote(source.journal)}",
            )


def validate_shard_spec(spec: cpb.ShardSpec) -> None:
    """A ShardSpec, checked in the order of docs/design/consumer.md#shard-specs."""
    validate_shard_id(spec.id)
    _validate_hints_config(spec)
    _validate_durations(spec)
    validate_spec_labels(spec.labels, "labels", reserved=(META_ID,))
    _validate_sources(spec)
    _validate_sizes(spec)


def validate_consumer_spec(spec: cpb.ConsumerSpec) -> None:
    """A member's ConsumerSpec: a valid process spec."""
    with within("process_spec"):
        validate_process_spec(spec.process_spec)
