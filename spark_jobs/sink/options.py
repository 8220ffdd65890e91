"""The options of a `gazette` write (batch or streaming), checked on the driver.

A write names where rows go in one of three ways: option `journal` (one
target journal; `.save("name")` is the same), a `journal` column of the
DataFrame (each row to the journal it names), or option `partitions` (a
label selector) with `keyColumn` (each row to the partition its key maps to,
as publishers map messages). A streaming write also needs `sinkId`: the
stable name under which its commits are recorded in the target journals'
registers (commit.py). Unknown options are refused, as for reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gazette_core.broker.client.channel import ClientConfig, default_address
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.labelset_ext import label_set, validate_label_set
from gazette_core.errors import ValidationError
from spark_jobs.source.options import (
    CLIENT_OPTIONS,
    check_known,
    client_config,
    option,
    parse_float,
    parse_int,
)

SINK_OPTIONS = ("journal", "path", "partitions", "keyColumn", "appendBytes", "timeout")
# Spark hands a streaming sink its query's checkpointLocation and queryName among the options.
STREAM_SINK_OPTIONS = (*SINK_OPTIONS, "sinkId", "checkpointLocation", "queryName")
ROUTE_COLUMN = "journal"
# Prefixes the register that records a streaming sink's last committed batch.
REGISTER_PREFIX = "spark-sink/"
# A task appends its rows in appends of about this size: few RPCs, bounded memory.
DEFAULT_APPEND_BYTES = 1 << 20


@dataclass(frozen=True)
class SinkOptions:
    """A write's options, parsed and checked (routing is checked against the schema later)."""

    broker: str
    client: ClientConfig | None
    journal: str | None  # the one target journal
    partitions: str | None  # a label selector of the target partitions
    key_column: str | None
    sink_id: str | None  # streaming: names the register of committed batches
    append_bytes: int = DEFAULT_APPEND_BYTES
    timeout: float = 30.0

    @property
    def register(self) -> str:
        """The name of the register holding this sink's last committed batch."""
        assert self.sink_id is not None
        return REGISTER_PREFIX + self.sink_id


def sink_options(options: Mapping[str, str], *, streaming: bool) -> SinkOptions:
    """The options of a write, checked: unknown names and bad values are refused."""
    known = STREAM_SINK_OPTIONS if streaming else SINK_OPTIONS
    check_known(options, known + CLIENT_OPTIONS, "streaming write" if streaming else "write")
    journal = _journal(options)
    partitions = (option(options, "partitions") or "").strip() or None
    key_column = (option(options, "keyColumn") or "").strip() or None
    if journal and partitions:
        raise ValidationError("option partitions", "route rows either to option journal "
                              f"{journal!r} or to partitions {partitions!r}, not both")
    if partitions and not key_column:
        raise ValidationError("option keyColumn", "writing to partitions needs the column "
                              "whose value picks each row's partition, e.g. "
                              ".option(\"keyColumn\", \"user\")")
    if key_column and not partitions:
        raise ValidationError("option keyColumn", f"{key_column!r} is only used with option "
                              "partitions (a label selector of the target journals)")
    return SinkOptions(
        broker=(option(options, "broker") or "").strip() or default_address(),
        client=client_config(options),
        journal=journal, partitions=partitions, key_column=key_column,
        sink_id=_sink_id(options) if streaming else None,
        append_bytes=parse_int(options, "appendBytes", DEFAULT_APPEND_BYTES, minimum=1),
        timeout=parse_float(options, "timeout", 30.0),
    )


def _journal(options: Mapping[str, str]) -> str | None:
    """Option journal, or Spark's `path` (`.save("name")`); both must name the same one."""
    journal = (option(options, "journal") or "").strip()
    path = (option(options, "path") or "").strip()
    if journal and path and journal != path:
        raise ValidationError("option journal", f"{journal!r} and the save() path {path!r} "
                              "name different journals: give one of them")
    return journal or path or None


def _sink_id(options: Mapping[str, str]) -> str:
    sink_id = (option(options, "sinkId") or "").strip()
    if not sink_id:
        raise ValidationError("option sinkId", "a streaming write needs a stable name that "
                              "records its commits in the journals' registers, e.g. "
                              ".option(\"sinkId\", \"clicks-per-minute\") (keep it with the "
                              "query's checkpointLocation)")
    try:
        validate_label_set(label_set((REGISTER_PREFIX + sink_id, "0")), False, "")
    except ValidationError:
        raise ValidationError("option sinkId", f"{sink_id!r} must be 1 to "
                              f"{64 - len(REGISTER_PREFIX)} letters, digits or -_+/.") from None
    return sink_id


def batch_guard(register: str, batch_id: int, query: str | None = None, *,
                owned: bool = True) -> tuple[pb.LabelSelector, pb.LabelSet]:
    """(check, union) of an ACK append committing streaming batch `batch_id` of `query`.

    The register holds `<query>/<batch>` (or `<batch>`, as written before queries were
    recorded). The check fails (REGISTER_MISMATCH) when the journal's register already
    records this batch, and, while `owned`, when it does not hold one of this query's
    batches (commit.py tells a journal new to the sink from another query's); the union
    records the batch, replacing the previous one since a union replaces every value of
    the names it carries.
    """
    if query is None:
        recorded = label_set((register, str(batch_id)))
        return pb.LabelSelector(exclude=recorded), recorded
    value = f"{query}/{batch_id}"
    include = pb.LabelSet(labels=[pb.Label(name=register, value=f"{query}/", prefix=True)])
    return (pb.LabelSelector(include=include if owned else None,
                             exclude=label_set((register, str(batch_id)), (register, value))),
            label_set((register, value)))
