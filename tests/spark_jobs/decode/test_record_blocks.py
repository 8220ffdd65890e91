"""Blocks of JSON and CSV records decoded by Arrow equal what the framings decode record by
record; blocks Arrow cannot take whole go record by record and name the offending record."""

from __future__ import annotations

import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType

from gazette_core.errors import ValidationError
from gazette_core.message.reader import MessageDecodeError
from spark_jobs.decode.arrow_frames import output_schema
from spark_jobs.decode.bulk_range import decode, slow_block
from spark_jobs.decode.content import CSV, JSON, JournalTask
from spark_jobs.decode.csv_blocks import csv_ends, decode_csv_block
from spark_jobs.decode.json_blocks import Block, decode_block, leading_uuids
from tests.spark_jobs.frames_support import Written, message_round

TYPED = StructType([StructField("offset", LongType()), StructField("uuid", StringType()),
                    StructField("n", LongType()), StructField("text", StringType()),
                    StructField("doc_journal", StringType())])


def task(kind: str) -> JournalTask:
    return JournalTask(journal="a/b", kind=kind, fragments=())


def rounds(kind: str) -> Block:
    written = Written()
    return Block(1000, b"".join(message_round(kind, r, written) for r in range(4)))


@pytest.mark.parametrize("kind", [JSON, CSV])
@pytest.mark.parametrize("typed", [False, True])
def test_a_block_decoded_by_arrow_equals_the_framing_record_by_record(kind: str,
                                                                       typed: bool) -> None:
    block = rounds(kind)
    schema = output_schema(kind, TYPED if typed and kind == JSON else
                           StructType(TYPED.fields[:4]) if typed else None)
    bulk = (decode_block if kind == JSON else decode_csv_block)("a/b", block, schema)
    assert bulk is not None
    slow = slow_block(task(kind), block, schema)
    assert bulk.batch.to_pylist() == slow.batch.to_pylist()
    assert bulk.offsets.tolist() == slow.offsets.tolist()
    for name in ("clock", "flags", "producer"):
        assert getattr(bulk.ids, name).tolist() == getattr(slow.ids, name).tolist()


def test_csv_records_end_at_newlines_outside_quotes() -> None:
    data = b'u1,"a\nb",c\nu2,"x""\n""y"\nu3,plain\n'
    assert csv_ends(data).tolist() == [11, 24, 33]


def test_a_uuid_spelt_another_way_is_read_record_by_record() -> None:
    data = (b'{"uuid":"{000003e9-0000-1000-8000-010203040506}","n":1}\n'
            b'{"uuid":"000003ea-0000-1000-8000-010203040506","n":2}\n')
    schema = output_schema(JSON, None)
    decoded = decode(task(JSON), Block(0, data), schema)
    assert decoded.batch.to_pylist() == slow_block(task(JSON), Block(0, data), schema
                                                   ).batch.to_pylist()
    assert decoded.batch.column("uuid").to_pylist() == [
        "000003e9-0000-1000-8000-010203040506", "000003ea-0000-1000-8000-010203040506"]


def test_a_record_that_is_not_a_document_is_named_by_its_offset() -> None:
    data = b'{"uuid":"","n":1}\nnot json\n'
    with pytest.raises(MessageDecodeError, match="a/b offset 118: cannot decode message"):
        decode(task(JSON), Block(100, data), output_schema(JSON, None))


def test_a_document_that_does_not_fit_the_schema_is_named_by_its_offset() -> None:
    data = b'{"uuid":"","n":1}\n{"uuid":"","n":"five"}\n'
    with pytest.raises(ValidationError, match="a/b offset 118: the document does not fit"):
        decode(task(JSON), Block(100, data), output_schema(JSON, TYPED))


@pytest.mark.parametrize("kind", [JSON, CSV])
def test_the_nil_uuid_is_no_uuid_in_bulk_as_record_by_record(kind: str) -> None:
    nil = "00000000-0000-0000-0000-000000000000"
    data = (f'{{"uuid":"{nil}","n":1}}\n{{"uuid":"","n":2}}\n' if kind == JSON
            else f"{nil},1\n{nil},2\n").encode()
    schema = output_schema(kind, None)
    bulk = (decode_block if kind == JSON else decode_csv_block)("a/b", Block(0, data), schema)
    assert bulk is not None
    assert bulk.batch.column("uuid").to_pylist() == [None, None]
    slow = slow_block(task(kind), Block(0, data), schema)
    assert bulk.batch.to_pylist() == slow.batch.to_pylist()


def test_a_csv_row_without_a_uuid_is_refused_as_the_framing_refuses_it() -> None:
    data = b"00000000-0000-0000-0000-000000000000,1\n,2\n"
    with pytest.raises(MessageDecodeError, match="a/b offset 39: cannot decode message"):
        decode(task(CSV), Block(0, data), output_schema(CSV, None))


def test_a_csv_field_that_does_not_fit_the_schema_is_named_by_its_offset() -> None:
    nil = b"00000000-0000-0000-0000-000000000000"
    data = nil + b",1\n" + nil + b",five\n"
    schema = output_schema(CSV, StructType([StructField("n", LongType())]))
    with pytest.raises(ValidationError, match=r"a/b offset 39: CSV field 1 \('five'\)"):
        decode(task(CSV), Block(0, data), schema)


def test_leading_uuids_are_those_the_documents_hold() -> None:
    block = rounds(JSON)
    found = leading_uuids(block)
    decoded = decode_block("a/b", block, output_schema(JSON, None))
    assert found is not None and decoded is not None
    assert found[0].tolist() == decoded.offsets.tolist()
    for name in ("clock", "flags", "producer"):
        assert getattr(found[1], name).tolist() == getattr(decoded.ids, name).tolist()
    # A document whose UUID is not first (or is missing) leaves the block to the parser.
    other = Block(0, block.data + b'{"n":1,"uuid":"00000000-0000-1000-8000-010203040506"}\n')
    assert leading_uuids(other) is None


def test_leading_uuids_are_read_after_a_space_as_json_dumps_writes_them() -> None:
    # Python's json.dumps writes `{"uuid": "...`: the scan of producer states reads it too.
    block = rounds(JSON)
    spaced = Block(block.base, block.data.replace(b'{"uuid":"', b'{"uuid": "'))
    found, decoded = leading_uuids(spaced), decode_block("a/b", spaced, output_schema(JSON, None))
    assert found is not None and decoded is not None
    assert found[0].tolist() == decoded.offsets.tolist()
    for name in ("clock", "flags", "producer"):
        assert getattr(found[1], name).tolist() == getattr(decoded.ids, name).tolist()


def test_uuids_in_capitals_read_in_lower_case_as_record_by_record() -> None:
    block = rounds(JSON)
    capitals = Block(block.base, b"\n".join(
        line[:9] + line[9:45].upper() + line[45:] for line in block.data.split(b"\n")))
    schema = output_schema(JSON, None)
    bulk = decode_block("a/b", capitals, schema)
    assert bulk is not None
    assert bulk.batch.to_pylist() == slow_block(task(JSON), capitals, schema).batch.to_pylist()
    assert bulk.batch.column("uuid").to_pylist() == decode_block(
        "a/b", block, schema).batch.column("uuid").to_pylist()


def test_a_read_of_no_document_field_takes_leading_uuids_unparsed_unless_failfast() -> None:
    block = rounds(JSON)
    permissive = output_schema(JSON, None, mode="PERMISSIVE")
    unparsed = decode_block("a/b", block, permissive)
    assert unparsed.batch.to_pylist() == slow_block(task(JSON), block, permissive).batch.to_pylist()
    # A record that leads with its UUID is its text and UUID, whatever follows: nothing
    # is parsed. FAILFAST parses, and names the record that is not a document.
    first = block.data.split(b"\n")[0]
    broken = Block(block.base, block.data + first[:46] + b" not json\n")
    rows = decode_block("a/b", broken, permissive).batch.to_pylist()
    assert rows[-1]["value"] == (first[:46] + b" not json").decode()
    assert rows[-1]["uuid"] == rows[0]["uuid"]
    with pytest.raises(MessageDecodeError, match=f"offset {block.base + len(block.data)}"):
        decode(task(JSON), broken, output_schema(JSON, None, mode="FAILFAST"))
