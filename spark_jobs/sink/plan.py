"""A write's plan, made on the driver: the routing, the message columns, the target journals.

The plan pickles to the executors. Targets named up front (option journal,
option partitions) are listed here, so a journal that does not exist or
cannot hold rows (no `content-type`, raw or protobuf) is refused before any
task runs; journals named by a `journal` column are only known row by row,
so tasks check them (`resolve_journal`) before publishing to them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gazette_core.broker.client.channel import close_channels, journal_stub
from gazette_core.broker.client.journals import list_journals
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.labels_ext import META_NAME
from gazette_core.broker.protocol.labelset_ext import label_set
from gazette_core.broker.protocol.names_ext import validate_journal_name
from gazette_core.broker.protocol.selector_ext import parse_selector
from gazette_core.errors import GazetteError, ValidationError
from gazette_core.message.framing import content_type
from spark_jobs.decode.columns import SOURCE_META
from spark_jobs.sink.encode import kind_of
from spark_jobs.sink.options import ROUTE_COLUMN, SinkOptions

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

JOURNAL, COLUMN, PARTITIONS = "journal", "column", "partitions"
VALUE_COLUMN = "value"
# The metadata columns of a read that a write does not carry into messages (its journal
# column is kept apart: it names the journal read, and routes only when asked).
READ_METADATA = tuple(c for c in SOURCE_META if c != ROUTE_COLUMN)


@dataclass(frozen=True)
class SinkPlan:
    """How rows become messages and where they go."""

    options: SinkOptions
    route: str  # JOURNAL, COLUMN or PARTITIONS
    columns: tuple[str, ...]  # the message's fields, in order
    targets: tuple[tuple[str, str], ...] = ()  # (journal, kind) known up front
    partition_specs: tuple[bytes, ...] = ()  # serialized JournalSpecs of the partitions
    value: str | None = None  # the column whose text is each whole message, if any

    @property
    def width(self) -> int:
        """Fields after the UUID of a CSV record (an ACK has as many, empty)."""
        return len(self.columns)


def plan_sink(options: SinkOptions, schema: StructType) -> SinkPlan:
    """Check the routing against the DataFrame's columns and list the targets."""
    names = schema.names
    types = {field.name.lower(): field.dataType.typeName() for field in schema.fields}
    # A uuid column marks rows read from journals: their metadata is no message field,
    # and their journal column names the journal read, not a target.
    read = "uuid" in types
    value = next((n for n in names if n.lower() == VALUE_COLUMN
                  and types[VALUE_COLUMN] in ("string", "binary")), None)
    dropped = {ROUTE_COLUMN, *(READ_METADATA if read else ())}
    columns = () if value else tuple(n for n in names if n.lower() not in dropped)
    if options.journal:
        return SinkPlan(options, JOURNAL, columns, (_one_journal(options),), value=value)
    if options.partitions:
        return replace(_partitions_plan(options, names, columns), value=value)
    if ROUTE_COLUMN not in types or read:
        raise ValidationError("option journal", "say where rows go: option journal, option "
                              "partitions with keyColumn, or a journal column in the DataFrame "
                              f"(its columns: {', '.join(names)})" + (
                                  "; rows read from journals (a uuid column) keep their "
                                  "journal column as metadata" if read else ""))
    if types[ROUTE_COLUMN] != "string":
        raise ValidationError("column journal", f"is {types[ROUTE_COLUMN]}: it names each "
                              "row's target journal, so it must be a string (or give option "
                              "journal and the column is not written)")
    return SinkPlan(options, COLUMN, columns, value=value)


def _one_journal(options: SinkOptions) -> tuple[str, str]:
    assert options.journal is not None
    try:
        validate_journal_name(options.journal, "option journal")
    except ValidationError as exc:
        raise ValidationError("option journal", exc.reason) from None
    specs = _list(options, pb.LabelSelector(include=label_set((META_NAME, options.journal))))
    if not specs:
        raise ValidationError("option journal", f"journal {options.journal!r} does not exist")
    return specs[0].name, target_kind(specs[0])


def _partitions_plan(options: SinkOptions, names: Sequence[str],
                     columns: tuple[str, ...]) -> SinkPlan:
    assert options.partitions is not None and options.key_column is not None
    if options.key_column not in names:
        raise ValidationError("option keyColumn", f"no column {options.key_column!r} in the "
                              f"DataFrame (its columns: {', '.join(names)})")
    try:
        selector = parse_selector(options.partitions)
    except ValidationError as exc:
        raise ValidationError("option partitions", f"{options.partitions!r}: {exc}") from None
    specs = sorted(_list(options, selector), key=lambda s: s.name)
    if not specs:
        raise ValidationError("option partitions",
                              f"no journal matches {options.partitions!r}")
    targets = tuple((spec.name, target_kind(spec)) for spec in specs)
    return SinkPlan(options, PARTITIONS, columns, targets,
                    tuple(spec.SerializeToString() for spec in specs))


def target_kind(spec: pb.JournalSpec) -> str:
    """JSON or CSV: how rows are written to the journal; refused when it has no such framing."""
    kind = kind_of(content_type(spec))
    if kind is None:
        found = content_type(spec)
        raise ValidationError(f"journal {spec.name}", (
            f"content-type {found!r} is not a framing rows can be written as" if found
            else "has no content-type label, so no message framing")
            + " (application/x-ndjson or text/csv)")
    return kind


def _list(options: SinkOptions, selector: pb.LabelSelector) -> list[pb.JournalSpec]:
    async def fetch() -> list[pb.JournalSpec]:
        try:
            stub = journal_stub(options.broker, options.client)
            listed = await list_journals(stub, selector, options.timeout)
            return [j.spec for j in listed.journals]
        finally:
            await close_channels()

    return asyncio.run(fetch())


async def resolve_journal(options: SinkOptions, name: str) -> str:
    """The kind of journal `name` (a `journal` column's value), listed from a task."""
    try:
        validate_journal_name(name, "column journal")
    except ValidationError as exc:
        raise ValidationError(f"column journal ({name!r})", exc.reason) from None
    selector = pb.LabelSelector(include=label_set((META_NAME, name)))
    stub = journal_stub(options.broker, options.client)
    try:
        listed = await list_journals(stub, selector, options.timeout)
    except GazetteError as exc:
        raise GazetteError(f"listing journal {name!r} to write to: {exc}") from None
    if not listed.journals:
        raise ValidationError(f"column journal ({name!r})", f"journal {name!r} does not exist")
    return target_kind(listed.journals[0].spec)

