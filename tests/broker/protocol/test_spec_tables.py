"""Our generated descriptors against the message and enum tables of docs/design/protocol.md."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf.descriptor import Descriptor, FileDescriptor

from gazette_core.broker.protocol import protocol_pb2
from gazette_core.consumer.protocol import consumer_pb2
from gazette_core.consumer.recoverylog import recorded_op_pb2
from tests.broker.protocol.spec_tables import (
    SpecEnum,
    SpecMessage,
    SpecParseError,
    SpecType,
    compare_section,
    parse_enums,
    parse_messages,
    parse_type,
)

REPO_ROOT = Path(__file__).resolve().parents[3]
TABLES = REPO_ROOT / "docs" / "design" / "protocol.md"

# (enum section or None, message section, descriptor the sections describe)
SECTIONS = [
    ("Broker enums", "Broker messages", protocol_pb2.DESCRIPTOR),
    ("Consumer enums", "Consumer messages", consumer_pb2.DESCRIPTOR),
    (None, "Recovery log messages", recorded_op_pb2.DESCRIPTOR),
]


def _load(
    enum_section: str | None, message_section: str
) -> tuple[dict[str, SpecMessage], dict[str, SpecEnum]]:
    text = TABLES.read_text(encoding="utf-8")
    enums = parse_enums(text, enum_section, TABLES.name) if enum_section else {}
    return parse_messages(text, message_section, TABLES.name), enums


def _our_types(file: FileDescriptor) -> set[str]:
    """Names (relative to the package) of every message and enum the file declares."""
    out: set[str] = set()

    def walk(desc: Descriptor) -> None:
        if desc.GetOptions().map_entry:
            return
        out.add(desc.full_name)
        out.update(e.full_name for e in desc.enum_types)
        for nested in desc.nested_types:
            walk(nested)

    out.update(e.full_name for e in file.enum_types_by_name.values())
    for message in file.message_types_by_name.values():
        walk(message)
    return {name.removeprefix(file.package + ".") for name in out}


@pytest.mark.parametrize(
    ("enum_section", "message_section", "file"),
    SECTIONS,
    ids=["broker.proto", "consumer.proto", "recorded_op.proto"],
)
def test_descriptors_match_spec(
    enum_section: str | None, message_section: str, file: FileDescriptor
) -> None:
    messages, enums = _load(enum_section, message_section)
    problems = compare_section(file, messages, enums)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("enum_section", "message_section", "file"),
    SECTIONS,
    ids=["broker.proto", "consumer.proto", "recorded_op.proto"],
)
def test_spec_describes_every_type_we_declare(
    enum_section: str | None, message_section: str, file: FileDescriptor
) -> None:
    messages, enums = _load(enum_section, message_section)
    described = set(messages) | set(enums)
    # Nested messages the table lists inside a field's type, e.g. Create{`path`=1}.
    for message in messages.values():
        ours = file.pool.FindMessageTypeByName(f"{file.package}.{message.name}")
        for sf in message.fields:
            if sf.subfields:
                nested = ours.fields_by_name[sf.name].message_type
                assert nested is not None, f"{message.name}.{sf.name} is not a message"
                described.add(nested.full_name.removeprefix(file.package + "."))
    undescribed = sorted(_our_types(file) - described)
    assert not undescribed, f"not in {TABLES.name}: {undescribed}"


def test_spec_sections_have_the_expected_size() -> None:
    broker_messages, broker_enums = _load("Broker enums", "Broker messages")
    assert len(broker_messages) == 31
    assert len(broker_enums) == 5
    assert len(broker_enums["Status"].values) == 16
    consumer_messages, consumer_enums = _load("Consumer enums", "Consumer messages")
    assert len(consumer_messages) == 21
    assert consumer_enums["ReplicaStatus.Code"].values == {
        "IDLE": 0,
        "BACKFILL": 100,
        "STANDBY": 200,
        "PRIMARY": 300,
        "FAILED": 400,
    }
    log_messages, _ = _load(None, "Recovery log messages")
    assert sorted(log_messages) == [
        "FSMHints",
        "FnodeSegments",
        "Property",
        "RecordedOp",
        "RecordedOp.Create",
        "RecordedOp.Link",
        "RecordedOp.Write",
        "Segment",
    ]


# --- the reader and the comparison, on small documents ----------------------

FORMATS = """\
# Doc

## 9. Things

### 9.1 Enums

**`Status`** (shared)

| Name | # | Meaning |
|---|---|---|
| `OK` | 0 | fine |
| `JOURNAL_NOT_FOUND` | 1 | gone |

**`JournalSpec.Flag`**: `NOT_SPECIFIED`=0x00 (default), `O_RDONLY`=0x01, `O_WRONLY`=2, O_RDWR=4.

### 9.2 Messages

Notation: prose without a bold name is ignored, even 1 `x` int64.

**Label**

| # | Field | Type | Meaning |
|---|---|---|---|
| 1 | `name` | string | the name |
| 2 | `value` | string (cast) | the value |
| 4 | — | — | unused |

**LabelSet**: 1 `labels` rep Label (nn) — sorted (by name; then value).

**ListRequest**: reserved 2, 3 (old); 1 `selector` LabelSelector (nn); 4 `watch` bool.

**ReplicaStatus** is stored. Field 1 is `code` (the Code enum above) and field 2 is
`errors` (repeated string).

- **Segment**: `author`=1 fixed32, `first_seq_no`=2, `log`=7 (repeated Property).

**RPC messages** (field 100 `extension` is an opaque bytes extension point):

| Message | Fields (number: name type) |
|---|---|
| ApplyResponse | 1: `status`; 2: `header` Header; 100 |
| GetHintsRequest | 1: `shard`; 100: `extension` |

| Message | # | Field | Type | Notes |
|---|---|---|---|---|
| RecordedOp | 4 | `create` | Create{`path`=1} | made |
| | 5 | `link` | Link{`fnode`=1 int64, `path`=2} | linked |
| Checkpoint | 2 | `ack_intents` | map<string, bytes> | acks |
"""


def test_enum_tables_and_inline_lists_are_read() -> None:
    enums = parse_enums(FORMATS, "9.1", "doc.md")
    assert {name: e.values for name, e in enums.items()} == {
        "Status": {"OK": 0, "JOURNAL_NOT_FOUND": 1},
        "JournalSpec.Flag": {"NOT_SPECIFIED": 0, "O_RDONLY": 1, "O_WRONLY": 2, "O_RDWR": 4},
    }


def test_every_message_format_is_read() -> None:
    messages = parse_messages(FORMATS, "9.2", "doc.md")

    def fields(name: str) -> list[tuple[str, int, str | None]]:
        return [(f.name, f.number, str(f.type) if f.type else None) for f in messages[name].fields]

    assert sorted(messages) == [
        "ApplyResponse",
        "Checkpoint",
        "GetHintsRequest",
        "Label",
        "LabelSet",
        "ListRequest",
        "RecordedOp",
        "ReplicaStatus",
        "Segment",
    ]
    assert fields("Label") == [("name", 1, "string"), ("value", 2, "string")]
    assert messages["Label"].unused == {4}
    assert fields("LabelSet") == [("labels", 1, "repeated Label")]
    assert fields("ListRequest") == [("selector", 1, "LabelSelector"), ("watch", 4, "bool")]
    assert messages["ListRequest"].reserved == {2, 3}
    assert fields("ReplicaStatus") == [("code", 1, "Code"), ("errors", 2, "repeated string")]
    assert fields("Segment") == [
        ("author", 1, "fixed32"),
        ("first_seq_no", 2, None),
        ("log", 7, "repeated Property"),
    ]
    assert fields("ApplyResponse") == [
        ("status", 1, None),
        ("header", 2, "Header"),
        ("extension", 100, "bytes"),
    ]
    assert fields("GetHintsRequest") == [("shard", 1, None), ("extension", 100, "bytes")]
    assert fields("RecordedOp") == [("create", 4, "Create"), ("link", 5, "Link")]
    link = messages["RecordedOp"].fields[1]
    assert [(s.name, s.number, str(s.type) if s.type else None) for s in link.subfields] == [
        ("fnode", 1, "int64"),
        ("path", 2, None),
    ]
    assert fields("Checkpoint") == [("ack_intents", 2, "map<string, bytes>")]
    assert messages["Checkpoint"].fields[0].where == "doc.md:48"


def test_type_phrases() -> None:
    assert parse_type("rep `_Fragment` (nn)", "w") == (SpecType("_Fragment", repeated=True), [])
    assert parse_type("map<string,int64>; 100", "w") == (
        SpecType("map", key="string", value="int64"),
        [],
    )
    assert parse_type("protocol.ProcessSpec (embedded). It contains", "w") == (
        SpecType("protocol.ProcessSpec"),
        [],
    )
    assert parse_type("(nn, unrouted)", "w") == (None, [])
    assert parse_type("— offset at which appends resume", "w") == (None, [])


def _compare(markdown: str) -> list[str]:
    doc = "## 9. Things\n\n### 9.1 Enums\n\n" + markdown
    return compare_section(
        protocol_pb2.DESCRIPTOR, parse_messages(doc, "9.1", "doc.md"), parse_enums(doc, "9.1", "d")
    )


def test_missing_field_is_reported() -> None:
    problems = _compare(
        "**Label**: 1 `name` string; 2 `value` string; 3 `prefix` bool; 4 `weight` int64.\n"
    )
    assert problems == ["Label.weight: field missing (spec: 4 int64, doc.md:5)"]


def test_missing_message_and_enum_are_reported() -> None:
    problems = _compare("**Nothing**: 1 `x` int64.\n\n**Mood**: HAPPY=1.\n")
    assert problems == ["Mood: enum missing", "Nothing: message missing"]


def test_number_mismatch_is_reported() -> None:
    problems = _compare("**Label**: 1 `name` string; 3 `value` string; 2 `prefix` bool.\n")
    assert problems == [
        "Label.value: number mismatch: table says 3, ours is 2 (doc.md:5)",
        "Label.prefix: number mismatch: table says 2, ours is 3 (doc.md:5)",
    ]


def test_type_mismatch_is_reported() -> None:
    problems = _compare(
        "| Message | # | Field | Type |\n|---|---|---|---|\n"
        "| Label | 1 | `name` | bytes |\n"
        "| LabelSet | 1 | `labels` | Label |\n"
        "| Fragment | 4 | `sum` | JournalSpec.Fragment |\n"
        "| Route | 2 | `primary` | Status |\n"
        "| Header | 3 | `etcd` | Etcd |\n"
    )
    assert problems == [
        "Label.name: type mismatch: table says bytes, ours is string (doc.md:7)",
        "Label.value: field not in the table (ours: 2 string)",
        "Label.prefix: field not in the table (ours: 3 bool)",
        "LabelSet.labels: type mismatch: table says Label, ours is repeated protocol.Label "
        "(doc.md:8)",
        "Fragment.sum: type mismatch: table says JournalSpec.Fragment, ours is protocol.SHA1Sum "
        "(doc.md:9)",
        "Fragment.journal: field not in the table (ours: 1 string)",
        "Fragment.begin: field not in the table (ours: 2 int64)",
        "Fragment.end: field not in the table (ours: 3 int64)",
        "Fragment.compression_codec: field not in the table (ours: 5 protocol.CompressionCodec)",
        "Fragment.backing_store: field not in the table (ours: 6 string)",
        "Fragment.mod_time: field not in the table (ours: 7 int64)",
        "Fragment.path_postfix: field not in the table (ours: 8 string)",
        "Route.primary: type mismatch: table says Status, ours is int32 (doc.md:10)",
        "Route.members: field not in the table (ours: 1 repeated protocol.ProcessSpec.ID)",
        "Route.endpoints: field not in the table (ours: 3 repeated string)",
        "Header.process_id: field not in the table (ours: 1 protocol.ProcessSpec.ID)",
        "Header.route: field not in the table (ours: 2 protocol.Route)",
    ]


def test_conventional_status_and_header_types_are_checked() -> None:
    problems = _compare("**SHA1Sum**: 1 `status`; 2 `header`; 3 `part3` fixed32.\n")
    assert problems == [
        "SHA1Sum.status: field missing (spec: 1 Status, doc.md:5)",
        "SHA1Sum.header: field missing (spec: 2 Header, doc.md:5)",
        "SHA1Sum.part1: field not in the table (ours: 1 fixed64)",
        "SHA1Sum.part2: field not in the table (ours: 2 fixed64)",
    ]


def test_map_and_nested_types_are_compared() -> None:
    doc = (
        "## 9. X\n\n### 9.1 Y\n\n"
        "**Checkpoint**: 1 `sources` map<string, int64>; 2 `ack_intents` map<string, bytes>.\n\n"
        "**StatRequest**: 1 `header` Header; 2 `shard` string; 3 `read_through` "
        "map<string, int64>; 100 `extension` string.\n"
    )
    problems = compare_section(consumer_pb2.DESCRIPTOR, parse_messages(doc, "9.1", "c.md"), {})
    assert problems == [
        "Checkpoint.sources: type mismatch: table says map<string, int64>, ours is "
        "map<string, consumer.Checkpoint.Source> (c.md:5)",
        "StatRequest.extension: type mismatch: table says string, ours is bytes (c.md:7)",
    ]


def test_nested_fields_in_a_type_are_compared() -> None:
    doc = (
        "## 9. X\n\n### 9.1 Y\n\n"
        "| Message | # | Field | Type |\n|---|---|---|---|\n"
        "| RecordedOp | 5 | `link` | Link{`fnode`=1 string, `path`=3} |\n"
    )
    problems = compare_section(recorded_op_pb2.DESCRIPTOR, parse_messages(doc, "9.1", "r.md"), {})
    assert problems[:2] == [
        "Link.fnode: type mismatch: table says string, ours is int64 (r.md:7)",
        "Link.path: number mismatch: table says 3, ours is 2 (r.md:7)",
    ]


def test_unresolvable_type_is_reported() -> None:
    problems = _compare("**LabelSet**: 1 `labels` rep Lable.\n")
    assert problems == ["LabelSet.labels: spec type repeated Lable names no known type (doc.md:5)"]


def test_enum_mismatches_are_reported() -> None:
    problems = _compare(
        "**CompressionCodec**: INVALID=0, NONE=1, GZIP=3, ZSTANDARD=2, SNAPPY=4, BROTLI=6.\n"
    )
    assert problems == [
        "CompressionCodec.GZIP: number mismatch: table says 3, ours is 2",
        "CompressionCodec.ZSTANDARD: number mismatch: table says 2, ours is 3",
        "CompressionCodec.BROTLI: enum value missing (spec: 6)",
        "CompressionCodec.GZIP_OFFLOAD_DECOMPRESSION: enum value not in the table (ours: 5)",
    ]


def test_reserved_and_unused_numbers_are_checked() -> None:
    problems = _compare(
        "**ListResponse**: reserved 4, 5; 1 `status` Status; 2 `header` Header (nn); "
        "3 `journals` rep ListResponse.Journal (nn).\n\n"
        "**ApplyResponse**\n\n| # | Field | Type | Meaning |\n|---|---|---|---|\n"
        "| 1 | `status` | Status | |\n| 2 | — | — | unused |\n"
    )
    assert problems == [
        "ListResponse: number 5 is reserved in the table but not in ours",
        "ApplyResponse: number 2 is unused in the table but ours declares ApplyResponse.header",
        "ApplyResponse.header: field not in the table (ours: 2 protocol.Header)",
    ]


def test_unreadable_tables_raise() -> None:
    doc = "## 9. X\n\n### 9.1 Y\n\n| # | Field | Type |\n|---|---|---|\n| 1 | `a` | int64 |\n"
    with pytest.raises(SpecParseError, match=r"^doc.md:7: field table row without a message name$"):
        parse_messages(doc, "9.1", "doc.md")
    with pytest.raises(SpecParseError, match=r"^section 9.7 not found or empty$"):
        parse_messages(doc, "9.7", "doc.md")
    bare = "## 9. X\n\n### 9.1 Y\n\n| Message | Fields |\n|---|---|\n| A | 1: `a`; 7 |\n"
    with pytest.raises(SpecParseError, match=r"^doc.md:7: bare field number 7 is not introduced$"):
        parse_messages(bare, "9.1", "doc.md")
