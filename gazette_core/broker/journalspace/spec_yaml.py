"""One JournalSpec as a YAML mapping, with keys in proto field order.

Zero values are left out on output; enums are written by name and durations
in Go syntax (`1m0s`). Input is strict: unknown keys are errors.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from google.protobuf.duration_pb2 import Duration
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.scalarstring import DoubleQuotedScalarString

from gazette_core.broker.journalspace.node import join_path
from gazette_core.broker.journalspace.yaml_values import (
    INT32,
    INT64,
    UINT32,
    as_enum,
    as_int,
    as_list,
    as_mapping,
    as_str,
    at_line,
    describe,
    item_line,
    key_line,
)
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.durations_ext import format_duration, parse_duration
from gazette_core.errors import ValidationError

SPEC_KEYS = ("name", "replication", "labels", "fragment", "flags", "max_append_rate", "suspend")
FRAGMENT_KEYS = (
    "length",
    "compression_codec",
    "stores",
    "refresh_interval",
    "retention",
    "flush_interval",
    "path_postfix_template",
)
_DURATION_KEYS = ("refresh_interval", "retention", "flush_interval")
_CODECS = dict(pb.CompressionCodec.items())
_FLAGS = dict(pb.JournalSpec.Flag.items())
_LEVELS = dict(pb.JournalSpec.Suspend.Level.items())


def spec_to_yaml_dict(spec: pb.JournalSpec) -> dict[str, Any]:
    """The spec's non-zero fields as an ordered mapping; `suspend` whenever set."""
    out = CommentedMap()
    _put(out, "name", spec.name)
    _put(out, "replication", spec.replication)
    if spec.labels.labels:
        out["labels"] = [_label_to_yaml(label) for label in spec.labels.labels]
    fragment = _fragment_to_yaml(spec.fragment)
    if fragment:
        out["fragment"] = fragment
    _put(out, "flags", _enum_name(_FLAGS, spec.flags))
    _put(out, "max_append_rate", spec.max_append_rate)
    if spec.HasField("suspend"):
        suspend = CommentedMap()
        _put(suspend, "level", _enum_name(_LEVELS, spec.suspend.level))
        _put(suspend, "offset", spec.suspend.offset)
        out["suspend"] = suspend
    return out


def _put(out: CommentedMap, key: str, value: object) -> None:
    if value not in (0, ""):
        out[key] = value


def _enum_name(names: Mapping[str, int], number: int) -> str | int:
    if number == 0:
        return 0
    return next((name for name, value in names.items() if value == number), number)


def _label_to_yaml(label: pb.Label) -> CommentedMap:
    # Go prints an empty value as `value: ""`; keep that spelling.
    out = CommentedMap()
    out["name"] = label.name
    out["value"] = label.value or DoubleQuotedScalarString("")
    return out


def _fragment_to_yaml(fragment: pb.JournalSpec.Fragment) -> CommentedMap:
    out = CommentedMap()
    _put(out, "length", fragment.length)
    _put(out, "compression_codec", _enum_name(_CODECS, fragment.compression_codec))
    if fragment.stores:
        out["stores"] = list(fragment.stores)
    for key in _DURATION_KEYS:
        duration = getattr(fragment, key)
        if duration.seconds or duration.nanos:
            out[key] = format_duration(duration)
    _put(out, "path_postfix_template", fragment.path_postfix_template)
    return out


def spec_from_yaml_dict(data: Mapping[str, Any], path: str = "") -> pb.JournalSpec:
    """Strictly decodes one JournalSpec mapping; errors carry `path` and lines."""
    return decode_spec(data, path, None, ())


def decode_spec(
    data: Any, path: str, line: int | None, extra_keys: Collection[str]
) -> pb.JournalSpec:
    """Decodes the spec fields of `data`, which may also hold `extra_keys`."""
    mapping = as_mapping(data, path, line, (*SPEC_KEYS, *extra_keys))
    spec = pb.JournalSpec()
    for key in SPEC_KEYS:
        if key in mapping:
            _decode_field(spec, key, mapping[key], join_path(path, key), key_line(mapping, key))
    # Assigning zeros marks the sub-message present; drop it to stay minimal.
    if spec.HasField("fragment") and spec.fragment == pb.JournalSpec.Fragment():
        spec.ClearField("fragment")
    return spec


def _decode_field(spec: pb.JournalSpec, key: str, value: Any, path: str, line: int | None) -> None:
    if key == "name":
        spec.name = as_str(value, path, line)
    elif key == "replication":
        spec.replication = as_int(value, path, line, INT32)
    elif key == "labels":
        for index, item in enumerate(as_list(value, path, line)):
            _decode_label(spec.labels, item, join_path(path, f"[{index}]"), item_line(value, index))
    elif key == "fragment":
        _decode_fragment(spec.fragment, value, path, line)
    elif key == "flags":
        spec.flags = as_enum(value, path, line, _FLAGS, UINT32)
    elif key == "max_append_rate":
        spec.max_append_rate = as_int(value, path, line, INT64)
    elif key == "suspend" and value is not None:
        suspend = as_mapping(value, path, line, ("level", "offset"))
        spec.suspend.SetInParent()
        if "level" in suspend:
            level_path, level_line = join_path(path, "level"), key_line(suspend, "level")
            level = as_enum(suspend["level"], level_path, level_line, _LEVELS, INT32)
            spec.suspend.level = pb.JournalSpec.Suspend.Level.ValueType(level)
        if "offset" in suspend:
            offset_path, offset_line = join_path(path, "offset"), key_line(suspend, "offset")
            spec.suspend.offset = as_int(suspend["offset"], offset_path, offset_line)


def _decode_label(labels: pb.LabelSet, item: Any, path: str, line: int | None) -> None:
    mapping = as_mapping(item, path, line, ("name", "value"))
    name = as_str(mapping.get("name"), join_path(path, "name"), key_line(mapping, "name"))
    value = as_str(mapping.get("value"), join_path(path, "value"), key_line(mapping, "value"))
    labels.labels.add(name=name, value=value)


def _decode_fragment(
    fragment: pb.JournalSpec.Fragment, value: Any, path: str, line: int | None
) -> None:
    mapping = as_mapping(value, path, line, FRAGMENT_KEYS)
    for key in FRAGMENT_KEYS:
        if key not in mapping:
            continue
        field, field_path, field_line = mapping[key], join_path(path, key), key_line(mapping, key)
        if key == "length":
            fragment.length = as_int(field, field_path, field_line, INT64)
        elif key == "compression_codec":
            codec = as_enum(field, field_path, field_line, _CODECS, INT32)
            fragment.compression_codec = pb.CompressionCodec.ValueType(codec)
        elif key == "stores":
            for index, store in enumerate(as_list(field, field_path, field_line)):
                store_path = join_path(field_path, f"[{index}]")
                fragment.stores.append(as_str(store, store_path, item_line(field, index)))
        elif key in _DURATION_KEYS:
            duration = _decode_duration(field, field_path, field_line)
            # Only non-zero durations are set, keeping decoded specs minimal.
            if duration.seconds or duration.nanos:
                getattr(fragment, key).CopyFrom(duration)
        else:
            fragment.path_postfix_template = as_str(field, field_path, field_line)


def _decode_duration(value: Any, path: str, line: int | None) -> Duration:
    if value is None:
        return Duration()
    if not isinstance(value, str):
        raise ValidationError(
            path, f'expected a Go duration like "1m0s", got {describe(value)}{at_line(line)}'
        )
    try:
        return parse_duration(value, path)
    except ValidationError as err:
        raise ValidationError(path, f"{err.reason}{at_line(line)}") from err
