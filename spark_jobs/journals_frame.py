"""Journals as Spark DataFrames: `read_journals(spark, selector, ...)`.

The driver lists the selected journals and their fragments through a broker
(`fetch_selection`, shared with prune) and plans one task per journal
(`plan_frame`, a pure function): the fragments covering the journal, in
offset order. Executors read each journal's fragments straight from their
stores and cut them into rows by the journal's framing (frame_rows.py), one
journal per task so its messages are sequenced in offset order.

Columns, by the `content-type` label the selected journals share:
- `application/x-ndjson`: journal, offset, uuid, producer, then one column per
  document field (the `uuid` field is the uuid column), with the schema given
  or else inferred from the documents (one more pass over them);
- `text/csv`: journal, offset, uuid, producer, then the columns after the UUID
  column, named and typed by the schema given or else `_c1`, `_c2`... strings;
- no label, or a type without a message framing: journal, offset, data
  (binary): the journal's bytes in offset order.
Only committed messages appear (read-committed: pending and rolled-back
messages, duplicates and ACKs are dropped). Protobuf journals are refused:
reading them needs the message type.

Snapshot: content is read up to each journal's write head when listed.
Content still only in the brokers' spools (fragments not persisted yet) is
read through the broker by default; with `unpersisted=False` it is left out
(and the transactions it would commit stay uncommitted). Suspended journals
are not read (their fragments are not listed), as with prune.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gazette_core.broker.client.channel import (
    ClientConfig,
    default_address,
)
from gazette_core.broker.client.journals import DEFAULT_TIMEOUT
from gazette_core.broker.fragment.cover_set import CoverSet, IndexEntry
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import ValidationError
from gazette_core.message.framing import CSV as CSV_TYPE
from gazette_core.message.framing import JSON_LINES, PROTOBUF_FIXED, content_type
from spark_jobs.frame_columns import META, column_name, columns_of, parse_schema, row_schema
from spark_jobs.frame_source import CSV, JSON, RAW, JournalTask, is_persisted
from spark_jobs.job_errors import spark_call
from spark_jobs.selection import FILE_ROOT_ENV, Selection, check_file_root

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

@dataclass
class FramePlan:
    """What executors read: one task per journal, and what was left out."""

    kind: str = RAW
    tasks: list[JournalTask] = field(default_factory=list)
    suspended: list[str] = field(default_factory=list)
    unpersisted_skipped: int = 0  # fragments left out with unpersisted=False
    bytes_total: int = 0  # content bytes the tasks cover


def journal_kind(spec: pb.JournalSpec) -> str:
    """How a journal's content becomes rows: JSON, CSV or RAW (its bytes)."""
    kind = content_type(spec).split(";", 1)[0].strip().lower()
    if kind == JSON_LINES:
        return JSON
    if kind == CSV_TYPE:
        return CSV
    if kind == PROTOBUF_FIXED:
        raise ValidationError("--selector", f"journal {spec.name} holds protobuf messages, "
                                            "which cannot be read as a table without their type")
    return RAW


def shared_kind(specs: list[pb.JournalSpec]) -> str:
    """The one kind of every journal; a selection mixing framings is refused."""
    kinds = {spec.name: journal_kind(spec) for spec in specs}
    distinct = sorted(set(kinds.values()))
    if len(distinct) > 1:
        examples = [next(n for n, k in sorted(kinds.items()) if k == kind) for kind in distinct]
        raise ValidationError("--selector", "the journals do not share one framing: " + ", ".join(
            f"{name} is {kind}" for name, kind in zip(examples, distinct, strict=True))
            + "; select journals of one content-type")
    return distinct[0] if distinct else RAW


def covering(fragments: list[pb.Fragment], since: int, unpersisted: bool) -> list[pb.Fragment]:
    """The fragments to read, ordered by offset, none inside another.

    Persisted fragments with a mod_time before `since` (unix seconds, 0: all)
    are left out, as `journals read --since` does; unpersisted ones too unless
    `unpersisted`.
    """
    cover = CoverSet()
    for f in sorted(fragments, key=lambda f: (f.begin, -f.end)):
        if is_persisted(f) and f.mod_time < since:
            continue
        if not is_persisted(f) and not unpersisted:
            continue
        cover.add(IndexEntry(f))
    return [entry.fragment for entry in cover if entry.fragment.end > entry.fragment.begin]


def plan_frame(selection: Selection, *, broker: str, since: int = 0, unpersisted: bool = True,
               file_root: str | None = None, file_only: bool = False,
               client: ClientConfig | None = None, ring_size: int = 8192) -> FramePlan:
    """One task per selected journal with content to read (pure: no I/O).

    `client` is the TLS and authorization executors read unpersisted content
    from `broker` with.
    """
    plan = FramePlan(kind=shared_kind([spec for spec, _ in selection.journals]),
                     suspended=list(selection.suspended))
    for spec, fragments in sorted(selection.journals, key=lambda j: j[0].name):
        chosen = covering(list(fragments), since, unpersisted)
        plan.unpersisted_skipped += sum(1 for f in fragments if not is_persisted(f)
                                        and not unpersisted)
        check_file_root([f for f in chosen if is_persisted(f)], file_root, file_only)
        if not chosen:
            continue
        plan.bytes_total += sum(f.end - f.begin for f in chosen)
        plan.tasks.append(JournalTask(
            journal=spec.name, kind=plan.kind,
            fragments=tuple(f.SerializeToString() for f in chosen),
            broker=broker if any(not is_persisted(f) for f in chosen) else "",
            file_root=file_root or "", file_only=file_only, ring_size=ring_size,
            client=client))
    return plan


def read_journals(spark: SparkSession, selector: str, *, broker: str | None = None,
                  schema: StructType | str | None = None, since: int = 0,
                  unpersisted: bool = True, file_root: str | None = None,
                  file_only: bool = False, timeout: float = DEFAULT_TIMEOUT) -> DataFrame:
    """The journals `selector` matches, through the broker at `broker`, as a DataFrame.

    `broker` defaults to $BROKER_ADDRESS, else http://localhost:8080, and
    `file_root` to $BROKER_FILE_ROOT (`gazctl local env` exports both).
    `schema` (a StructType or DDL such as "n LONG, text STRING") types the
    document columns; `since` (unix seconds) skips fragments persisted
    before it; `file_root` roots `file://` stores (all stores with
    `file_only`), as the brokers' --broker.file-root does. The read is
    `spark.read.format("gazette")` with these as its options.
    """
    options = frame_options(selector, broker=broker, since=since, unpersisted=unpersisted,
                            file_root=file_root, file_only=file_only, timeout=timeout)
    return load_frame(spark, options, schema)


def frame_options(selector: str, *, broker: str | None = None, since: int = 0,
                  unpersisted: bool = True, file_root: str | None = None,
                  file_only: bool = False, timeout: float = DEFAULT_TIMEOUT,
                  client: ClientConfig | None = None) -> dict[str, str]:
    """The `gazette` data source's options of a read (Spark's are strings)."""
    options = {"selector": selector, "broker": broker or default_address(),
               "since": str(since), "unpersisted": str(unpersisted).lower(),
               "fileOnly": str(file_only).lower(), "timeout": str(timeout)}
    if root := file_root or os.environ.get(FILE_ROOT_ENV):
        options["fileRoot"] = root
    return options | client_options(client)


def client_options(client: ClientConfig | None) -> dict[str, str]:
    """A client configuration as the data source's TLS and authorization options."""
    if client is None:
        return {}
    tls = {"tlsCertFile": client.tls.cert_file, "tlsKeyFile": client.tls.key_file,
           "tlsCaFile": client.tls.ca_file}
    options = {name: value for name, value in tls.items() if value}
    if client.auth is not None and client.auth.key:
        options["authKeys"] = base64.b64encode(client.auth.key).decode()
    elif client.auth is not None and client.auth.token:
        options["authToken"] = client.auth.token
    return options


def load_frame(spark: SparkSession, options: dict[str, str],
               schema: StructType | str | None = None) -> DataFrame:
    """The DataFrame of a `gazette` read: the data source's rows, the documents' columns
    typed by `schema` (after the metadata) or, for JSON without one, inferred in the JVM."""
    from spark_jobs.datasource import FORMAT, register

    given = parse_schema(schema)
    register(spark)
    reader = spark.read.format(FORMAT).options(**options)
    base = spark_call(reader.load)
    kind = kind_of(base.columns)
    if given is None or kind == RAW:
        return spark_call(lambda: columns_of(spark, base, kind, None))
    return spark_call(reader.schema(source_schema(kind, given)).load)


def kind_of(columns: list[str]) -> str:
    """The framing of a read, by the last of its undecoded columns (frame_columns.row_schema)."""
    return {"value": JSON, "fields": CSV}.get(columns[-1], RAW)


def source_schema(kind: str, given: StructType) -> StructType:
    """The data source's columns for document columns `given`: the metadata, then each
    field (`doc_journal` for a document's own `journal`). A JSON document's uuid is the
    uuid column; a CSV record's fields are after it."""
    from pyspark.sql.types import StructField, StructType

    fields = [f for f in given.fields if not (kind == JSON and f.name == "uuid")]
    return StructType([f for f in row_schema(kind).fields if f.name in META] + [
        StructField(column_name(f.name), f.dataType, f.nullable, f.metadata) for f in fields])
