"""Where each row of an Arrow batch goes: the target journals and each row's index among them.

Column by column, as the encoding is: a `journal` column or a key column is
dictionary-encoded, so Python sees each distinct journal name or key once
(a key is mapped to its partition once per batch), never once per row.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from gazette_core.errors import ValidationError


@dataclass(frozen=True)
class Route:
    """The batch's target journals, and per row the index of its journal in `journals`
    (None: every row goes to the first)."""

    journals: list[str]
    index: np.ndarray | None

    def rows_of(self) -> list[tuple[str, np.ndarray | None]]:
        """Each target journal with its rows, in order (None: all of the batch's rows)."""
        if self.index is None:
            return [(journal, None) for journal in self.journals[:1]]
        return [(journal, np.flatnonzero(self.index == i))
                for i, journal in enumerate(self.journals)]


def route_kinds(route: Route, kinds: list[str], rows: int) -> list[str]:
    """The kind of each row's journal, `kinds` being those of `route.journals`."""
    if route.index is None:
        return [kinds[0] if kinds else ""] * rows
    return [kinds[i] for i in route.index.tolist()]


def column_of(batch: pa.RecordBatch, name: str) -> pa.Array:
    """The column `name` (any case) of the batch."""
    for index, field in enumerate(batch.schema):
        if field.name.lower() == name.lower():
            return batch.column(index)
    raise ValidationError(f"column {name}", "missing from the rows written")


def one(journal: str, rows: int) -> Route:
    return Route([journal], None) if rows else Route([], None)


async def by_column(batch: pa.RecordBatch, name: str,
                    check: Callable[[str], Awaitable[None]]) -> Route:
    """Each row to the journal its `name` column holds; `check` vets each new name."""
    column = column_of(batch, name)
    if column.null_count:
        raise ValidationError(f"column {name}", "a row's journal is null")
    names, index = _distinct(column)
    for journal in names:
        await check(journal)
    return _route(names, index)


def by_key(batch: pa.RecordBatch, name: str, partition: Callable[[Any], str]) -> Route:
    """Each row to the partition its key maps to (each distinct key mapped once)."""
    column = column_of(batch, name)
    if column.null_count:
        raise ValidationError(f"column {name}", "a row's key is null: it cannot pick a "
                              "partition")
    keys, index = _distinct(column)
    targets = [partition(key) for key in keys]
    journals = sorted(set(targets))
    position = np.array([journals.index(t) for t in targets], dtype=np.int64)
    return _route(journals, position[index] if len(index) else index)


def _distinct(column: pa.Array) -> tuple[list[Any], np.ndarray]:
    encoded = column.dictionary_encode()
    return encoded.dictionary.to_pylist(), encoded.indices.to_numpy(zero_copy_only=False)


def _route(journals: list[Any], index: np.ndarray) -> Route:
    if len(index) == 0:
        return Route([], None)
    if len(journals) == 1:
        return Route(journals, None)
    return Route(journals, index)
