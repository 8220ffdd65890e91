"""Journals as Spark DataFrames: `read_journals(spark, selector, ...)`.

The driver lists the selected journals and their fragments through a broker
(selection.py, shared with prune) and plans one task per journal
(source/frame_plan.py, a pure function): the fragments covering the journal, in
offset order. Executors read each journal's fragments straight from their
stores and cut them into rows by the journal's framing (decode/rows.py), one
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
from typing import TYPE_CHECKING

from gazette_core.broker.client.channel import ClientConfig, default_address
from gazette_core.broker.client.journals import DEFAULT_TIMEOUT
from spark_jobs.decode.columns import META, column_name, columns_of, parse_schema, row_schema
from spark_jobs.decode.content import CSV, JSON, RAW
from spark_jobs.job_errors import spark_call
from spark_jobs.selection import FILE_ROOT_ENV

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


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
    """The framing of a read, by the last of its undecoded columns (decode/columns.row_schema)."""
    return {"value": JSON, "fields": CSV}.get(columns[-1], RAW)


def source_schema(kind: str, given: StructType) -> StructType:
    """The data source's columns for document columns `given`: the metadata, then each
    field (`doc_journal` for a document's own `journal`). A JSON document's uuid is the
    uuid column; a CSV record's fields are after it."""
    from pyspark.sql.types import StructField, StructType

    fields = [f for f in given.fields if not (kind == JSON and f.name == "uuid")]
    return StructType([f for f in row_schema(kind).fields if f.name in META] + [
        StructField(column_name(f.name), f.dataType, f.nullable, f.metadata) for f in fields])
