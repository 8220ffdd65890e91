"""Metric families whose series are plain attributes, cheap enough for hot paths.

prometheus_client's labelled metrics take a lock and build a label tuple on
each `.labels(...)` (about a microsecond). A family here hands out one
series object per label values; callers keep it (per journal, replica, RPC
method or batch) and add to its `value` directly, which costs an attribute
increment. Families register with prometheus_client's default registry, so
they are scraped with its own collectors (process, GC). Only the event
loop's thread updates them: there are no locks.

A family's name is written exactly as given: a counter need not end in
`_total` (Go Gazette has `gazette_sequencer_queued`), and the exposition
types it `counter` under that very name. An unlabelled family has its one
series from the start, so it is scraped as 0 before anything happened, as
Go's are; a labelled one shows a series once something asked for it.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence
from typing import Generic, TypeVar

from prometheus_client import REGISTRY
from prometheus_client.metrics_core import Metric
from prometheus_client.utils import floatToGoString

# Go client_golang's default buckets (seconds), which go-grpc-prometheus uses too.
DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class ExactMetric(Metric):
    """A collected family whose samples carry its exact name (see the module docstring)."""


class Cell:
    """One counter or gauge series: add to `value` (counters) or set it (gauges)."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value: float = 0


class HistogramCell:
    """One histogram series: counts per bucket (not cumulative; the last is +Inf)."""

    __slots__ = ("bounds", "count", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        # A bucket counts values at most its bound: the first bound >= value.
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value
        self.count += 1


C = TypeVar("C", Cell, HistogramCell)


class _Family(Generic[C]):
    kind = ""

    def __init__(self, name: str, documentation: str, labels: Sequence[str] = (), *,
                 hide_zeros: bool = False) -> None:
        self.name, self.documentation = name, documentation
        self.label_names = tuple(labels)
        # Series still at zero are left out (for families whose series are made up front).
        self.hide_zeros = hide_zeros
        self._cells: dict[tuple[str, ...], C] = {}
        if not self.label_names:
            self._cells[()] = self._new()
        REGISTRY.register(self)

    def _new(self) -> C:
        raise NotImplementedError

    def cell(self, *values: str) -> C:
        """The series of these label values (in the family's label order), made on first use."""
        cell = self._cells.get(values)
        if cell is None:
            if len(values) != len(self.label_names):
                raise ValueError(f"{self.name} takes labels {self.label_names}, not {values}")
            cell = self._cells[values] = self._new()
        return cell

    def show(self, cell: C, *values: str) -> None:
        """Expose `cell`, made beforehand (e.g. by `new_cell`), as the series of `values`."""
        if len(values) != len(self.label_names):
            raise ValueError(f"{self.name} takes labels {self.label_names}, not {values}")
        self._cells[values] = cell

    def new_cell(self) -> C:
        """A series not exposed yet (see `show`): for one that should appear only once used."""
        return self._new()

    def remove(self, *values: str) -> None:
        """Drop a series (e.g. of a shard no longer served here); absent ones are ignored."""
        self._cells.pop(values, None)

    def describe(self) -> list[Metric]:
        return [ExactMetric(self.name, self.documentation, self.kind)]

    def collect(self) -> Iterator[Metric]:
        metric = ExactMetric(self.name, self.documentation, self.kind)
        for values, cell in list(self._cells.items()):
            if self.hide_zeros and not self._nonzero(cell):
                continue
            self._samples(metric, dict(zip(self.label_names, values, strict=True)), cell)
        yield metric

    def _samples(self, metric: Metric, labels: dict[str, str], cell: C) -> None:
        raise NotImplementedError

    def _nonzero(self, cell: C) -> bool:
        raise NotImplementedError


class Counter(_Family[Cell]):
    """A counter family; its series only ever grow."""

    kind = "counter"

    def _new(self) -> Cell:
        return Cell()

    def _samples(self, metric: Metric, labels: dict[str, str], cell: Cell) -> None:
        metric.add_sample(self.name, labels, cell.value)

    def _nonzero(self, cell: Cell) -> bool:
        return cell.value != 0


class Gauge(Counter):
    """A gauge family; its series are set to the current figure."""

    kind = "gauge"


class Histogram(_Family[HistogramCell]):
    """A histogram family with fixed bucket bounds."""

    kind = "histogram"

    def __init__(self, name: str, documentation: str, labels: Sequence[str] = (),
                 buckets: Sequence[float] = DEFAULT_BUCKETS, *, hide_zeros: bool = False
                 ) -> None:
        self.bounds = tuple(sorted(float(b) for b in buckets))
        super().__init__(name, documentation, labels, hide_zeros=hide_zeros)

    def _new(self) -> HistogramCell:
        return HistogramCell(self.bounds)

    def _samples(self, metric: Metric, labels: dict[str, str], cell: HistogramCell) -> None:
        total = 0
        for bound, count in zip((*cell.bounds, float("inf")), cell.counts, strict=True):
            total += count
            metric.add_sample(f"{self.name}_bucket", {**labels, "le": floatToGoString(bound)},
                              total)
        metric.add_sample(f"{self.name}_sum", labels, cell.sum)
        metric.add_sample(f"{self.name}_count", labels, cell.count)

    def _nonzero(self, cell: HistogramCell) -> bool:
        return cell.count != 0
