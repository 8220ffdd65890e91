"""Shard sets to and from YAML text: `common` (a partial ShardSpec) and `shards`.

Each shard is a mapping of its ShardSpec fields plus `delete`, `revision` and
`comment`. `common` takes every ShardSpec field but `id`; `delete` exists
only per shard. Decoding is strict (unknown keys, mistyped values and YAML
syntax errors are ValidationErrors with their line); dumping then loading
gives the same set, and dumping that again the same bytes.
"""

from __future__ import annotations

from typing import Any

from ruamel.yaml.comments import CommentedMap

from gazette_core.broker.journalspace.yaml_io import dump_yaml, parse_yaml
from gazette_core.broker.journalspace.yaml_values import (
    INT64,
    as_bool,
    as_int,
    as_list,
    as_mapping,
    as_str,
    item_line,
    key_line,
)
from gazette_core.consumer.shardspace.model import Entry, ShardSet
from gazette_core.consumer.shardspace.spec_yaml import SPEC_KEYS, decode_spec, spec_to_yaml_dict

SET_KEYS = ("common", "shards")
SHARD_KEYS = ("delete", "revision", "comment")
COMMON_KEYS = tuple(key for key in SPEC_KEYS if key != "id")


def load_set(text: str) -> ShardSet:
    """Decodes a shard set; an empty document is an empty set."""
    data = parse_yaml(text)
    mapping = as_mapping(data, "", None, SET_KEYS)
    common = decode_spec(mapping.get("common"), "common", key_line(mapping, "common"),
                         allowed=COMMON_KEYS)
    shards = as_list(mapping.get("shards"), "shards", key_line(mapping, "shards"))
    return ShardSet(common, [_decode_entry(item, f"shards[{index}]", item_line(shards, index))
                             for index, item in enumerate(shards)])


def _decode_entry(data: Any, path: str, line: int | None) -> Entry:
    entry = Entry(decode_spec(data, path, line, SHARD_KEYS))
    if "delete" in data and data["delete"] is not None:
        entry.delete = as_bool(data["delete"], f"{path}.delete", key_line(data, "delete"))
    if "revision" in data:
        entry.revision = as_int(data["revision"], f"{path}.revision",
                                key_line(data, "revision"), INT64)
    if "comment" in data:
        # An empty comment is no comment, so it round-trips as absent.
        entry.comment = as_str(data["comment"], f"{path}.comment",
                               key_line(data, "comment")) or None
    return entry


def dump_set(shard_set: ShardSet) -> str:
    """Encodes a shard set: `common` when it holds a value, then `shards`."""
    out = CommentedMap()
    common = spec_to_yaml_dict(shard_set.common)
    if common:
        out["common"] = common
    out["shards"] = [_encode_entry(entry) for entry in shard_set.shards]
    return dump_yaml(out)


def _encode_entry(entry: Entry) -> CommentedMap:
    out = spec_to_yaml_dict(entry.spec)
    if entry.delete:
        out["delete"] = True
    if entry.revision:
        out["revision"] = entry.revision
    if entry.comment:
        out["comment"] = entry.comment
    return out
