"""One ShardSpec as a YAML mapping, keys in proto field order, and strictly back.

Zero values are left out on output and durations are written in Go syntax
(`1s`, `1m0s`). Input is strict: unknown keys and mistyped values are
ValidationErrors naming the field and line.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from google.protobuf.duration_pb2 import Duration
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.scalarstring import DoubleQuotedScalarString

from gazette_core.broker.journalspace.node import join_path
from gazette_core.broker.journalspace.yaml_values import (
    INT32,
    INT64,
    UINT32,
    as_bool,
    as_int,
    as_list,
    as_mapping,
    as_str,
    at_line,
    describe,
    item_line,
    key_line,
)
from gazette_core.broker.protocol.durations_ext import format_duration, parse_duration
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.errors import ValidationError

SPEC_KEYS = ("id", "sources", "recovery_log_prefix", "hint_prefix", "hint_backups",
             "max_txn_duration", "min_txn_duration", "disable", "hot_standbys", "labels",
             "disable_wait_for_ack", "ring_buffer_size", "read_channel_size")
DURATIONS = ("max_txn_duration", "min_txn_duration")
STRINGS = ("id", "recovery_log_prefix", "hint_prefix")
BOOLS = ("disable", "disable_wait_for_ack")
INTS = {"hint_backups": INT32, "hot_standbys": UINT32, "ring_buffer_size": UINT32,
        "read_channel_size": UINT32}


def spec_to_yaml_dict(spec: cpb.ShardSpec) -> CommentedMap:
    """The spec's non-zero fields as an ordered mapping."""
    out = CommentedMap()
    for key in SPEC_KEYS:
        if key == "sources":
            if spec.sources:
                out[key] = [_source_to_yaml(s) for s in spec.sources]
        elif key == "labels":
            if spec.labels.labels:
                out[key] = [_label_to_yaml(label.name, label.value)
                            for label in spec.labels.labels]
        elif key in DURATIONS:
            duration = getattr(spec, key)
            if duration.seconds or duration.nanos:
                out[key] = format_duration(duration)
        elif (value := getattr(spec, key)) not in (0, "", False):
            out[key] = value
    return out


def _source_to_yaml(source: cpb.ShardSpec.Source) -> CommentedMap:
    out = CommentedMap()
    out["journal"] = source.journal
    if source.min_offset:
        out["min_offset"] = source.min_offset
    return out


def _label_to_yaml(name: str, value: str) -> CommentedMap:
    out = CommentedMap()
    out["name"] = name
    out["value"] = value or DoubleQuotedScalarString("")  # as Go prints an empty value
    return out


def decode_spec(data: Any, path: str, line: int | None,
                extra_keys: Collection[str] = (), allowed: Collection[str] = SPEC_KEYS
                ) -> cpb.ShardSpec:
    """Decodes the spec fields of `data`, which may also hold `extra_keys`."""
    mapping = as_mapping(data, path, line, (*allowed, *extra_keys))
    spec = cpb.ShardSpec()
    for key in allowed:
        if key in mapping:
            _decode_field(spec, key, mapping[key], join_path(path, key), key_line(mapping, key))
    return spec


def _decode_field(spec: cpb.ShardSpec, key: str, value: Any, path: str,
                  line: int | None) -> None:
    if key in STRINGS:
        setattr(spec, key, as_str(value, path, line))
    elif key in BOOLS:
        setattr(spec, key, value is not None and as_bool(value, path, line))
    elif key in INTS:
        setattr(spec, key, as_int(value, path, line, INTS[key]))
    elif key in DURATIONS:
        duration = _decode_duration(value, path, line)
        if duration.seconds or duration.nanos:  # only non-zero ones, keeping specs minimal
            getattr(spec, key).CopyFrom(duration)
    elif key == "sources":
        for index, item in enumerate(as_list(value, path, line)):
            item_path = join_path(path, f"[{index}]")
            source = as_mapping(item, item_path, item_line(value, index),
                                ("journal", "min_offset"))
            spec.sources.add(
                journal=as_str(source.get("journal"), join_path(item_path, "journal"),
                               key_line(source, "journal")),
                min_offset=as_int(source.get("min_offset"), join_path(item_path, "min_offset"),
                                  key_line(source, "min_offset"), INT64))
    else:  # labels
        for index, item in enumerate(as_list(value, path, line)):
            item_path = join_path(path, f"[{index}]")
            label = as_mapping(item, item_path, item_line(value, index), ("name", "value"))
            spec.labels.labels.add(
                name=as_str(label.get("name"), join_path(item_path, "name"),
                            key_line(label, "name")),
                value=as_str(label.get("value"), join_path(item_path, "value"),
                             key_line(label, "value")))


def _decode_duration(value: Any, path: str, line: int | None) -> Duration:
    if value is None:
        return Duration()
    if not isinstance(value, str):
        raise ValidationError(
            path, f'expected a Go duration like "1s", got {describe(value)}{at_line(line)}')
    try:
        return parse_duration(value, path)
    except ValidationError as err:
        raise ValidationError(path, f"{err.reason}{at_line(line)}") from err
