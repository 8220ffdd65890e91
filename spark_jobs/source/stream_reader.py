"""Streaming reads of the `gazette` data source: micro-batches of journal ranges.

Spark keeps one `StreamReader` on the driver for the life of a query and
asks it for offsets (stream_offsets.py: per journal, an offset and the
producers' states there). Each `latestOffset` lists the selected journals
(stream_listing.py), decides how far each is read next (stream_plan.py:
write heads, admission control, data loss) and computes the producers'
states at those ends with `range_read.scan_states`, seeded by the states at
the start. `partitions`
turns a (start, end) pair into `RangeTask`s that executors read straight
from the stores, emitting the messages whose commit point lies in the range:
a transaction pending at the end of one micro-batch comes out once, in the
batch that reads its ACK, and a restarted query resumes from its checkpoint
with the states it had.

Journals that start matching the selector while the query runs enter at
their earliest offset in one micro-batch (nothing is read for them then) and
are read from there in the next, so a replayed batch plans them the same way.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    SupportsTriggerAvailableNow,
)

from gazette_core.errors import GazetteError, ValidationError
from spark_jobs.decode.arrow_frames import task_schema_json
from spark_jobs.decode.bulk_sequence import forget_idle
from spark_jobs.source.batch_reader import RangePartition
from spark_jobs.source.offset_checks import check_stream_start
from spark_jobs.source.range_read import RangeTask, read_range, scan_states
from spark_jobs.source.stream_listing import list_stream, range_task
from spark_jobs.source.stream_offsets import (
    Position,
    Positions,
    decode,
    encode,
    lag_metrics,
    parse_starting,
    starting_offset,
)
from spark_jobs.source.stream_plan import (
    Journal,
    Loss,
    admit,
    lost_at_start,
    pruned_opens,
    readable_end,
    skip_loss,
    split_points,
)

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    import pyarrow as pa
    from pyspark.sql.types import StructType

    from spark_jobs.source.options import ReadOptions

log = logging.getLogger(__name__)


class DataLoss(GazetteError):
    """Content a streaming query still needs is gone (failOnDataLoss)."""


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: ReadOptions, schema: StructType) -> None:
        self.options = options
        self.schema_json = task_schema_json(schema, options.mode, options.corrupt_column)
        self.starting = parse_starting(options.starting_offsets)
        self.kind = ""
        self.target: dict[str, int] | None = None  # Trigger.AvailableNow's heads
        self.latest: dict[str, int] | None = None
        self.planned: dict[str, int] = {}  # The last latestOffset's ends, for the lag
        self.listed: dict[str, Journal] = {}  # The last listing: latestOffset's for partitions
        self.suspended: set[str] = set()  # Not listed with fragments: they hold still.

    # Offsets -------------------------------------------------------------------------------

    def initialOffset(self) -> dict[str, Any]:
        # A selector that matches nothing yet starts empty: journals are picked up as they match.
        journals = self._list(allow_empty=True)
        named = set(self.starting) if isinstance(self.starting, dict) else set()
        if unknown := sorted(named - set(journals)):
            raise ValidationError("option startingOffsets", f"journal {unknown[0]} is not one "
                                  f"the selector {self.options.selector!r} matches")
        check_stream_start(self.options, self.kind, journals, self.starting)
        return encode({name: Position(starting_offset(self.starting, name, j.earliest, j.head))
                       for name, j in journals.items()})

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_bytes_per_trigger > 0:
            return ReadMaxBytes(self.options.max_bytes_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = {name: j.head for name, j in self._list(allow_empty=True).items()}

    def reportLatestOffset(self) -> dict[str, Any] | None:
        """The write heads, and how far the planned ends trail them (`lag`): Spark shows this
        as the progress's `latestOffset`, the one place a Python source can report lag."""
        if self.latest is None:
            return None
        heads = encode({name: Position(head) for name, head in self.latest.items()})
        return {**heads, "lag": lag_metrics(self.latest, self.planned)}

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        journals = self._list(allow_empty=True)
        positions = decode(start)
        ends = self._positioned(journals, positions)
        starts, readable = {}, {}
        for name, at in positions.items():
            if name in ends or name not in journals:
                continue
            target = None if self.target is None else self.target.get(name, at.offset)
            starts[name] = at.offset
            readable[name] = readable_end(journals[name], at, target)
        max_bytes = limit.max_bytes if isinstance(limit, ReadMaxBytes) else None
        for name, end in admit(journals, starts, readable, max_bytes).items():
            ends[name] = self._advance(journals[name], positions[name], end)
        planned = {**positions, **ends}
        self.planned = {name: at.offset for name, at in planned.items()}
        return encode(planned)

    def _positioned(self, journals: dict[str, Journal], positions: Positions) -> Positions:
        """Journals that move without being read: new ones, ones past lost content; deleted
        ones are dropped (failOnDataLoss false) from `positions`."""
        moved: Positions = {}
        for name in sorted(set(positions) - set(journals) - self.suspended):
            self._lost(f"journal {name} was deleted or no longer matches the selector, at "
                       f"offset {positions[name].offset} of the query")
            del positions[name]
        for name, journal in journals.items():
            at = positions.get(name)
            if at is None:
                if self.target is None or name in self.target:
                    moved[name] = Position(journal.earliest)
                continue
            if journal.fragments and journal.head < at.offset:
                self._lost(f"journal {name}: its write head {journal.head} is before the "
                           f"query's offset {at.offset} (deleted and created again?)")
                moved[name] = Position(journal.earliest)
                continue
            kept, dropped = pruned_opens(journal, at)
            if dropped:
                log.warning("journal %s: the open transactions of producers %s began in "
                            "content pruned from the stores before offset %d; dropping them "
                            "as abandoned", name, ", ".join(dropped), at.offset)
                moved[name] = at = kept
            loss = lost_at_start(journal, at)
            if loss is not None:
                self._lost(loss.message())
                moved[name] = skip_loss(at, loss)
        return moved

    def _advance(self, journal: Journal, at: Position, end: int) -> Position:
        if end <= at.offset:
            return at
        return Position(end, forget_idle(scan_states(self._task(journal, at, end))))

    def _lost(self, message: str) -> None:
        if self.options.fail_on_data_loss:
            raise DataLoss(message)
        log.warning("%s; skipping it (failOnDataLoss is false)", message)

    # Partitions ----------------------------------------------------------------------------

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        begins, ends = decode(start), decode(end)
        moving = {name: at for name, at in ends.items()
                  if name in begins and at.offset > begins[name].offset}
        if not moving:
            return []
        journals = self.listed
        if any(name not in journals or journals[name].head < at.offset
               for name, at in moving.items()):
            journals = self._list(allow_empty=True)  # A replay after a restart, most likely.
        partitions: list[InputPartition] = []
        for name in sorted(moving):
            at, stop = begins[name], moving[name].offset
            journal = journals.get(name)
            gap = (journal.first_gap(at.lowest_needed(), stop) if journal is not None
                   else (at.offset, stop))
            if gap is not None:
                self._lost(Loss(name, *gap).message())
                continue
            assert journal is not None
            partitions.extend(self._ranges(journal, at, stop))
        return partitions

    def _ranges(self, journal: Journal, at: Position, stop: int) -> list[InputPartition]:
        """[at, stop) as range tasks, cut at fragment ends into ranges of about splitBytes."""
        out: list[InputPartition] = []
        for cut in split_points(journal, at.offset, stop, self.options.split_bytes):
            task = self._task(journal, at, cut)
            out.append(RangePartition(task))
            at = Position(cut, scan_states(task))
        out.append(RangePartition(self._task(journal, at, stop)))
        return out

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, RangePartition)
        yield from read_range(partition.task)

    # Listing -----------------------------------------------------------------------------

    def _task(self, journal: Journal, at: Position, end: int) -> RangeTask:
        return range_task(self.options, self.kind, self.schema_json, journal, at, end)

    def _list(self, *, allow_empty: bool) -> dict[str, Journal]:
        """The selected journals now; remembered, with their framing and the suspended ones."""
        listing = list_stream(self.options, allow_empty=allow_empty)
        if listing.journals:
            self.kind = listing.kind
        self.latest = {name: j.head for name, j in listing.journals.items()}
        self.listed, self.suspended = listing.journals, listing.suspended
        return listing.journals
