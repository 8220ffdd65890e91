"""Strict, typed reads of decoded YAML values, with the line each came from.

Every failure is a ValidationError whose path names the field and whose reason
names the offending value or key and, when the YAML was loaded with position
marks, its 1-based line.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from gazette_core.broker.protocol.names_ext import quote
from gazette_core.errors import ValidationError

INT32 = (-(1 << 31), (1 << 31) - 1)
UINT32 = (0, (1 << 32) - 1)
INT64 = (-(1 << 63), (1 << 63) - 1)


def key_line(mapping: Mapping[Any, Any], key: Any) -> int | None:
    """The 1-based line of `key` in a position-marked mapping, else None."""
    marks = getattr(mapping, "lc", None)
    try:
        return int(marks.key(key)[0]) + 1 if marks is not None else None
    except (KeyError, TypeError, AttributeError):
        return None


def item_line(sequence: list[Any], index: int) -> int | None:
    """The 1-based line of item `index` in a position-marked sequence, else None."""
    marks = getattr(sequence, "lc", None)
    try:
        return int(marks.item(index)[0]) + 1 if marks is not None else None
    except (KeyError, TypeError, AttributeError, IndexError):
        return None


def at_line(line: int | None) -> str:
    """The suffix ` at line N`, or nothing when the position is unknown."""
    return f" at line {line}" if line is not None else ""


def describe(value: Any) -> str:
    """A short description of a decoded value, for error reasons."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"the string {quote(value)}"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__}"


def _wrong(expected: str, value: Any, path: str, line: int | None) -> ValidationError:
    return ValidationError(path, f"expected {expected}, got {describe(value)}{at_line(line)}")


def as_mapping(
    value: Any, path: str, line: int | None, allowed: Collection[str]
) -> Mapping[Any, Any]:
    """`value` as a mapping whose keys are all in `allowed`; null is empty."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _wrong("a mapping", value, path, line)
    for key in value:
        if not isinstance(key, str) or key not in allowed:
            raise ValidationError(
                path, f"unknown key {quote(str(key))}{at_line(key_line(value, key))}"
            )
    return value


def as_list(value: Any, path: str, line: int | None) -> list[Any]:
    """`value` as a list; null is empty."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise _wrong("a list", value, path, line)
    return value


def as_str(value: Any, path: str, line: int | None) -> str:
    """`value` as a string; null is empty, a bare integer or boolean reads as its text."""
    if value is None:
        return ""
    # Unquoted scalars such as a label value of 1 or true read as text, as Go does.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if not isinstance(value, str):
        raise _wrong("a string", value, path, line)
    return str(value)


def as_int(value: Any, path: str, line: int | None, bounds: tuple[int, int] = INT64) -> int:
    """`value` as an integer within `bounds`; null is zero."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise _wrong("an integer", value, path, line)
    if not bounds[0] <= value <= bounds[1]:
        raise ValidationError(
            path, f"{value} is out of range [{bounds[0]}, {bounds[1]}]{at_line(line)}"
        )
    return int(value)


def as_bool(value: Any, path: str, line: int | None) -> bool:
    """`value` as a boolean."""
    if not isinstance(value, bool):
        raise _wrong("true or false", value, path, line)
    return value


def as_enum(
    value: Any, path: str, line: int | None, names: Mapping[str, int], bounds: tuple[int, int]
) -> int:
    """An enum given by one of `names` or by its number; null is zero."""
    if isinstance(value, str):
        if value not in names:
            choices = ", ".join(names)
            raise ValidationError(
                path, f"unknown value {quote(value)}{at_line(line)} (expected one of {choices})"
            )
        return names[value]
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return as_int(value, path, line, bounds)
    raise _wrong("a name or an integer", value, path, line)
