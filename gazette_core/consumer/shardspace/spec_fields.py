"""Field-wise algebra over partial ShardSpecs: inherit, intersect, subtract.

A zero value means "not set here", and results are built minimal (a duration
only when non-zero), so specs built the same way compare equal with `==`.
`sources` is one value (a shard names all its sources or none); labels go by
name, as a set of values, and a shard naming a label replaces the common
values of that name. `id` is never part of the algebra.
"""

from __future__ import annotations

from typing import Any

from gazette_core.broker.journalspace.spec_fields import agreed, differing
from gazette_core.broker.protocol.labels_ext import LabelMap, add_label_map, label_map
from gazette_core.consumer.protocol import consumer_pb2 as cpb

SCALARS = ("recovery_log_prefix", "hint_prefix", "hint_backups", "disable", "hot_standbys",
           "disable_wait_for_ack", "ring_buffer_size", "read_channel_size")
DURATIONS = ("max_txn_duration", "min_txn_duration")

# Non-zero comparable values by field: sources as ((journal, min_offset), ...),
# durations as (seconds, nanos).
FieldMap = dict[str, Any]


def field_map(spec: cpb.ShardSpec) -> FieldMap:
    values: FieldMap = {name: getattr(spec, name) for name in SCALARS}
    values["sources"] = tuple((s.journal, s.min_offset) for s in spec.sources)
    for name in DURATIONS:
        duration = getattr(spec, name)
        values[name] = (duration.seconds, duration.nanos)
    return {key: value for key, value in values.items() if not _is_zero(value)}


def build_spec(fields: FieldMap, labels: LabelMap) -> cpb.ShardSpec:
    """A minimal ShardSpec holding exactly the non-zero `fields` and `labels`."""
    spec = cpb.ShardSpec()
    for key, value in fields.items():
        if _is_zero(value):
            continue
        if key == "sources":
            spec.sources.extend(cpb.ShardSpec.Source(journal=j, min_offset=o) for j, o in value)
        elif key in DURATIONS:
            duration = getattr(spec, key)
            duration.seconds, duration.nanos = value
        else:
            setattr(spec, key, value)
    add_label_map(spec.labels, labels)
    return spec


def inherit(child: cpb.ShardSpec, parent: cpb.ShardSpec) -> cpb.ShardSpec:
    """The child's values, with every field it leaves zero taken from `parent`; its id kept."""
    spec = build_spec({**field_map(parent), **field_map(child)},
                      {**label_map(parent.labels), **label_map(child.labels)})
    spec.id = child.id
    return spec


def intersect(specs: list[cpb.ShardSpec]) -> cpb.ShardSpec:
    """The values every spec agrees on (labels: names with identical value sets)."""
    if not specs:
        return cpb.ShardSpec()
    return build_spec(agreed([field_map(s) for s in specs]),
                      agreed([label_map(s.labels) for s in specs]))


def subtract(child: cpb.ShardSpec, parent: cpb.ShardSpec) -> cpb.ShardSpec:
    """The child's values that differ from its parent's; its id kept."""
    spec = build_spec(differing(field_map(child), field_map(parent)),
                      differing(label_map(child.labels), label_map(parent.labels)))
    spec.id = child.id
    return spec


def _is_zero(value: object) -> bool:
    return value in (0, "", (), (0, 0), False)
