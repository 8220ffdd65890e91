"""Typed decoding of a JSONMessage: each JSON value must fit the type its field declares.

As Go's `json.Unmarshal` does for a struct, a value of the wrong JSON type
fails the message, naming the field: `{"n": "five"}` for `n: int` is
"field Num.n: expected int, got string 'five'" rather than a string in an
int field that surfaces later (in a store's integer column, say). JSON
null leaves a field at its default unless it is Optional, and a JSON
number that is whole may fill a float field.

Checked: str, int, float, bool, `X | None`, list[X], tuple[X, ...] and
dict[str, X], nested as deep as declared. Other types (a nested dataclass,
Any, a type that does not resolve) take the JSON value as it is; override
`load_json_dict` to decode those.

A field's plan is worked out once per class. The common case, a value
whose Python type is exactly the declared one, costs one `type(v) is T`
test per field.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from typing import Any

# Returned by a converter for a JSON null in a field that is not Optional.
KEEP = object()


class _Never:
    """A type no JSON value has: its fields always go through their converter."""


Converter = Callable[[str, Any], Any]
# (field name, the type a value may have to be taken as it is, converter of any other value)
Plan = tuple[tuple[str, type, Converter], ...]

_PLANS: dict[type, Plan] = {}


class FieldTypeError(TypeError):
    """A JSON value does not fit its field's declared type."""


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _mismatch(path: str, expected: str, value: Any) -> FieldTypeError:
    if value is None:
        return FieldTypeError(f"field {path}: expected {expected}, got null")
    shown = repr(value)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return FieldTypeError(f"field {path}: expected {expected}, got {_kind(value)} {shown}")


def _name(tp: Any) -> str:
    return tp.__name__ if isinstance(tp, type) else str(tp).replace("typing.", "")


def plan(cls: type) -> Plan:
    """How each field of dataclass `cls` takes its JSON value (cached per class)."""
    found = _PLANS.get(cls)
    if found is None:
        try:
            hints = typing.get_type_hints(cls)
        except Exception:  # a type that does not resolve here: take values as they are
            hints = {}
        rows = []
        for f in dataclasses.fields(cls):
            exact, convert = _converter(hints.get(f.name, Any), f"{cls.__name__}.{f.name}")
            rows.append((f.name, exact, convert))
        found = _PLANS[cls] = tuple(rows)
    return found


def _converter(tp: Any, path: str) -> tuple[type, Converter]:
    """The exact type of values taken as they are, and the converter of all others."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp in (str, bool, int, float):
        return tp, _scalar(tp, path)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        inner = rest[0] if len(rest) == 1 else Any
        exact, convert = _converter(inner, path)
        return exact, _optional(convert)
    if origin is list and args:
        return _Never, _sequence(list, args[0], path, _name(tp))
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return _Never, _sequence(tuple, args[0], path, _name(tp))
    if origin is dict and len(args) == 2 and args[0] is str:
        return _Never, _mapping(args[1], path, _name(tp))
    if tp in (list, dict):
        return tp, _container(tp, path)
    return _Never, _as_is


def _as_is(_: str, value: Any) -> Any:
    return value


def _scalar(tp: type, path: str) -> Converter:
    def convert(at: str, value: Any) -> Any:
        if value is None:
            return KEEP
        if tp is float and type(value) is int:
            return float(value)
        raise _mismatch(at or path, tp.__name__, value)
    return convert


def _optional(convert: Converter) -> Converter:
    def optional(at: str, value: Any) -> Any:
        return None if value is None else convert(at, value)
    return optional


def _container(tp: type, path: str) -> Converter:
    def convert(at: str, value: Any) -> Any:
        if value is None:
            return KEEP
        raise _mismatch(at or path, "array" if tp is list else "object", value)
    return convert


def _sequence(kind: type, item: Any, path: str, shown: str) -> Converter:
    exact, convert = _converter(item, path)
    item_name = _name(item)

    def sequence(at: str, value: Any) -> Any:
        at = at or path
        if value is None:
            return KEEP
        if type(value) is not list:
            raise _mismatch(at, shown, value)
        out = [_item(exact, convert, f"{at}[{i}]", item_name, v) for i, v in enumerate(value)]
        return tuple(out) if kind is tuple else out
    return sequence


def _mapping(item: Any, path: str, shown: str) -> Converter:
    exact, convert = _converter(item, path)
    item_name = _name(item)

    def mapping(at: str, value: Any) -> Any:
        at = at or path
        if value is None:
            return KEEP
        if type(value) is not dict:
            raise _mismatch(at, shown, value)
        return {k: _item(exact, convert, f"{at}[{k!r}]", item_name, v) for k, v in value.items()}
    return mapping


def _item(exact: type, convert: Converter, at: str, shown: str, value: Any) -> Any:
    """An element of an array or object: null is no element, and must be declared Optional."""
    if type(value) is exact:
        return value
    out = convert(at, value)
    if out is KEEP:
        raise _mismatch(at, shown, value)
    return out
