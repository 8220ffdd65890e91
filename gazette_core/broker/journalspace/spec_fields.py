"""Field-wise algebra over partial JournalSpecs: inherit, intersect, subtract.

A zero value means "not set here". Results are built in a minimal form: a
sub-message is only set when it holds a non-zero value, so specs built the same
way compare equal with `==`. Labels are handled per label name, as a set of
values; `suspend` and `name` are never part of the algebra.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.labels_ext import LabelMap, add_label_map, label_map

SPEC_SCALARS = ("replication", "flags", "max_append_rate")
FRAGMENT_SCALARS = ("length", "compression_codec", "path_postfix_template")
FRAGMENT_DURATIONS = ("refresh_interval", "retention", "flush_interval")

# Non-zero comparable values keyed by field path, e.g. "fragment.length";
# stores are a tuple and durations a (seconds, nanos) pair.
FieldMap = dict[str, Any]
V = TypeVar("V")


def field_map(spec: pb.JournalSpec) -> FieldMap:
    """The spec's non-zero values of every inheritable field but labels."""
    values: FieldMap = {name: getattr(spec, name) for name in SPEC_SCALARS}
    for name in FRAGMENT_SCALARS:
        values[f"fragment.{name}"] = getattr(spec.fragment, name)
    values["fragment.stores"] = tuple(spec.fragment.stores)
    for name in FRAGMENT_DURATIONS:
        duration = getattr(spec.fragment, name)
        values[f"fragment.{name}"] = (duration.seconds, duration.nanos)
    return {key: value for key, value in values.items() if not _is_zero(value)}


def build_spec(fields: FieldMap, labels: LabelMap) -> pb.JournalSpec:
    """A minimal JournalSpec holding exactly the non-zero `fields` and `labels`."""
    spec = pb.JournalSpec()
    for key, value in fields.items():
        if _is_zero(value):
            continue
        if not key.startswith("fragment."):
            setattr(spec, key, value)
            continue
        attr = key.removeprefix("fragment.")
        if attr == "stores":
            spec.fragment.stores.extend(value)
        elif attr in FRAGMENT_DURATIONS:
            seconds, nanos = value
            duration = getattr(spec.fragment, attr)
            duration.seconds, duration.nanos = seconds, nanos
        else:
            setattr(spec.fragment, attr, value)
    add_label_map(spec.labels, labels)
    return spec


def inherit(child: pb.JournalSpec, parent: pb.JournalSpec) -> pb.JournalSpec:
    """The child's values, with every field it leaves zero taken from `parent`.

    A child naming a label replaces all of the parent's values for that name.
    """
    fields = {**field_map(parent), **field_map(child)}
    labels = {**label_map(parent.labels), **label_map(child.labels)}
    return build_spec(fields, labels)


def intersect(specs: list[pb.JournalSpec]) -> pb.JournalSpec:
    """The values every spec agrees on (labels: names with identical value sets)."""
    if not specs:
        return pb.JournalSpec()
    return build_spec(agreed([field_map(s) for s in specs]),
                      agreed([label_map(s.labels) for s in specs]))


def subtract(child: pb.JournalSpec, parent: pb.JournalSpec) -> pb.JournalSpec:
    """The child's values that differ from its parent's, keeping its suspend."""
    result = build_spec(differing(field_map(child), field_map(parent)),
                        differing(label_map(child.labels), label_map(parent.labels)))
    if child.HasField("suspend"):
        result.suspend.CopyFrom(child.suspend)
    return result


def agreed(maps: Sequence[Mapping[str, V]]) -> dict[str, V]:
    """The entries every one of `maps` holds with an equal value."""
    first, *rest = maps
    return {k: v for k, v in first.items() if all(m.get(k) == v for m in rest)}


def differing(child: Mapping[str, V], parent: Mapping[str, V]) -> dict[str, V]:
    """The entries of `child` that `parent` does not hold with an equal value."""
    return {k: v for k, v in child.items() if parent.get(k) != v}


def _is_zero(value: object) -> bool:
    return value in (0, "", (), (0, 0))
