"""The columns of a journals DataFrame: rows as executors make them, then typed columns.

Executors emit (journal, offset, uuid, producer, value) for JSON journals,
(journal, offset, uuid, producer, fields) for CSV and (journal, offset, data)
for raw ones (rows.py). Here the value and fields become columns: JSON
documents through `from_json` with the schema given, or one inferred from
every document (the rows are cached so the journals are read once); CSV
fields by position, cast to the schema's types, or as `_c1`... strings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gazette_core.errors import ValidationError
from spark_jobs.decode.content import CSV, JSON

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructType

META = ("journal", "offset", "uuid", "producer")
# The data source's metadata: META and each message's publish time, from its UUID's clock.
SOURCE_META = (*META, "timestamp")


def row_schema(kind: str) -> StructType:
    """The schema of the rows executors make for journals of `kind`."""
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    head = [StructField("journal", StringType(), False), StructField("offset", LongType(), False)]
    if kind in (JSON, CSV):
        value = (StructField("value", StringType(), False) if kind == JSON
                 else StructField("fields", ArrayType(StringType()), False))
        return StructType([*head, StructField("uuid", StringType(), True),
                           StructField("producer", StringType(), True), value])
    return StructType([*head, StructField("data", BinaryType(), False)])


def source_row_schema(kind: str) -> StructType:
    """The data source's columns without a schema: row_schema's, with `timestamp` (the
    publish time, null without a UUID) after `producer` for message journals."""
    from pyspark.sql.types import StructField, StructType, TimestampType

    base = row_schema(kind)
    if kind not in (JSON, CSV):
        return base
    return StructType([*base.fields[:4], StructField("timestamp", TimestampType(), True),
                       *base.fields[4:]])


def parse_schema(schema: StructType | str | None) -> StructType | None:
    """A StructType from a DDL string ("n LONG, text STRING"), or as given."""
    from pyspark.errors import PySparkException
    from pyspark.sql.types import StructType

    if schema is None or isinstance(schema, StructType):
        return schema
    try:
        parsed = StructType.fromDDL(schema)
    except (PySparkException, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValidationError("--schema", f"{schema!r} is not a schema: {first}") from None
    if not isinstance(parsed, StructType):
        raise ValidationError("--schema", f"{schema!r} is a single type, not columns")
    return parsed


def columns_of(spark: SparkSession, base: DataFrame, kind: str,
               schema: StructType | str | None) -> DataFrame:
    """The typed DataFrame of executor rows `base` of journals of `kind`."""
    given = parse_schema(schema)
    if kind == JSON:
        return _json_columns(spark, base, given)
    if kind == CSV:
        return _csv_columns(base, given)
    return base


def _json_columns(spark: SparkSession, base: DataFrame, given: StructType | None) -> DataFrame:
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    if given is None:
        base = base.cache()  # Inferring reads every document; reading it again would re-read.
        given = infer_json_schema(spark, base) if not base.isEmpty() else StructType()
    # The document's uuid is the uuid column; its other fields follow the metadata.
    fields = StructType([f for f in given.fields if f.name != "uuid"])
    if not fields.fields:
        return base.select(*META)
    parsed = base.select(*META, F.from_json("value", fields).alias("_doc"))
    return parsed.select(*META, *(F.col("_doc").getField(f.name).alias(column_name(f.name))
                                  for f in fields.fields))


def column_name(field: str) -> str:
    """The column of a message field: `doc_` first when a metadata column has its name."""
    return f"doc_{field}" if field in SOURCE_META else field


def infer_json_schema(spark: SparkSession, base: DataFrame) -> StructType:
    """The schema of every document in `base`'s value column, inferred within the JVM.

    PySpark infers only from an RDD, which would carry each document from the
    JVM to Python and back; the JVM reader takes the column as it is.
    """
    import json

    from pyspark.sql.types import StructType

    jvm = spark.sparkContext._jvm
    assert jvm is not None
    # Dataset.as is a Python keyword: reached by name.
    values = getattr(base.select("value")._jdf, "as")(jvm.org.apache.spark.sql.Encoders.STRING())
    inferred = spark._jsparkSession.read().json(values).schema().json()
    return StructType.fromJson(json.loads(inferred))


def _csv_columns(base: DataFrame, given: StructType | None) -> DataFrame:
    from pyspark.sql import functions as F

    names: list[tuple[str, DataType | None]]
    if given is None:
        width = base.select(F.max(F.size("fields"))).first()
        count = int(width[0]) if width is not None and width[0] is not None else 0
        names = [(f"_c{i + 1}", None) for i in range(count)]
    else:
        names = [(f.name, f.dataType) for f in given.fields]
    columns = []
    for i, (name, kind) in enumerate(names):
        column = F.get(F.col("fields"), i)  # null past the end of a short row
        columns.append((column.cast(kind) if kind is not None else column).alias(
            column_name(name)))
    return base.select(*META, *columns)
