"""SHA1Sum conversions, codec extensions, content names and Fragment validation."""

from __future__ import annotations

import hashlib

import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.fragment_ext import (
    codec_extension,
    codec_from_extension,
    content_name,
    content_path,
    parse_content_path,
    sha1_to_sum,
    sum_from_hex,
    sum_is_zero,
    sum_to_digest,
    sum_to_hex,
    validate_fragment,
)
from gazette_core.errors import ValidationError

HELLO_SUM = pb.SHA1Sum(part1=0xAAF4C61DDCC5E8A2, part2=0xDABEDE0F3B482CD9, part3=0xAEA9434D)


def test_sha1_to_sum_of_hello() -> None:
    digest = hashlib.sha1(b"hello").digest()
    assert sha1_to_sum(digest) == HELLO_SUM
    expected = pb.SHA1Sum(part1=12318688712325458082, part2=15762279902843776217, part3=2930328397)
    assert expected == HELLO_SUM
    assert sum_to_digest(HELLO_SUM) == digest
    assert sum_to_hex(HELLO_SUM) == "aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d"
    assert sum_from_hex("AAF4C61DDCC5E8A2DABEDE0F3B482CD9AEA9434D") == HELLO_SUM


def test_sum_is_zero() -> None:
    assert sum_is_zero(pb.SHA1Sum())
    assert not sum_is_zero(HELLO_SUM)
    assert not sum_is_zero(pb.SHA1Sum(part3=1))


def test_sha1_to_sum_rejects_wrong_length() -> None:
    with pytest.raises(ValidationError) as info:
        sha1_to_sum(b"\x00" * 19)
    assert str(info.value) == "sum: expected a 20-byte SHA1 digest (got 19 bytes)"


def test_sum_from_hex_rejects_junk() -> None:
    with pytest.raises(ValidationError) as info:
        sum_from_hex("abc")
    assert str(info.value) == 'sum: expected 40 hex digits (got "abc")'


@pytest.mark.parametrize(
    ("codec", "ext"),
    [
        (pb.NONE, ".raw"),
        (pb.GZIP, ".gz"),
        (pb.ZSTANDARD, ".zst"),
        (pb.SNAPPY, ".sz"),
        (pb.GZIP_OFFLOAD_DECOMPRESSION, ""),
    ],
)
def test_codec_extension_round_trip(codec: int, ext: str) -> None:
    assert codec_extension(codec) == ext
    assert codec_from_extension(ext) == codec


@pytest.mark.parametrize(
    ("ext", "codec"),
    [
        (".GZ", pb.GZIP),
        (".gzip", pb.GZIP),
        (".zstandard", pb.ZSTANDARD),
        (".Snappy", pb.SNAPPY),
        (".gzod", pb.GZIP_OFFLOAD_DECOMPRESSION),
        (".RAW", pb.NONE),
    ],
)
def test_codec_from_extension_aliases(ext: str, codec: int) -> None:
    assert codec_from_extension(ext) == codec


def test_codec_errors() -> None:
    with pytest.raises(ValidationError) as info:
        codec_from_extension(".bz2")
    assert str(info.value) == 'compression_codec: unrecognized compression extension ".bz2"'
    with pytest.raises(ValidationError) as info:
        codec_extension(pb.INVALID)
    assert str(info.value) == "compression_codec: invalid compression codec 0"


SPEC_FRAGMENT = pb.Fragment(
    journal="a/journal",
    begin=1000,
    end=1500,
    sum=pb.SHA1Sum(part1=0x2694),
    compression_codec=pb.SNAPPY,
)
SPEC_NAME = "00000000000003e8-00000000000005dc-0000000000002694000000000000000000000000.sz"


def test_content_name_spec_example() -> None:
    assert content_name(SPEC_FRAGMENT) == SPEC_NAME
    assert content_path(SPEC_FRAGMENT) == f"a/journal/{SPEC_NAME}"


def test_content_path_with_postfix_and_offload_codec() -> None:
    fragment = pb.Fragment(
        journal="my/journal",
        begin=0,
        end=5,
        sum=HELLO_SUM,
        compression_codec=pb.GZIP_OFFLOAD_DECOMPRESSION,
        path_postfix="date=2019-11-19/hour=22",
    )
    assert content_path(fragment) == (
        "my/journal/date=2019-11-19/hour=22/0000000000000000-0000000000000005-"
        "aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d"
    )


def test_parse_content_path_inverts_content_path() -> None:
    assert parse_content_path("a/journal", SPEC_NAME) == SPEC_FRAGMENT
    parsed = parse_content_path(
        "my/journal",
        "date=2019-11-19/hour=22/3e8-5DC-aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d.GZIP",
    )
    assert parsed == pb.Fragment(
        journal="my/journal",
        begin=1000,
        end=1500,
        sum=HELLO_SUM,
        compression_codec=pb.GZIP,
        path_postfix="date=2019-11-19/hour=22",
    )
    offload = parse_content_path("my/journal", "0-5-aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d")
    assert offload.compression_codec == pb.GZIP_OFFLOAD_DECOMPRESSION


ZERO40 = "0" * 40


@pytest.mark.parametrize(
    ("relpath", "message"),
    [
        (
            "notes.txt",
            'content_path: "notes.txt": expected a name of the form <begin>-<end>-<sha1><ext>',
        ),
        (
            f"0-1-2-{ZERO40}.raw",
            f'content_path: "0-1-2-{ZERO40}.raw": expected a name of the form '
            "<begin>-<end>-<sha1><ext>",
        ),
        (
            f"0x1-2-{ZERO40}.raw",
            f'content_path: "0x1-2-{ZERO40}.raw": expected a hex offset (got "0x1")',
        ),
        (
            f"-2-{ZERO40}.raw",
            f'content_path: "-2-{ZERO40}.raw": expected a hex offset (got "")',
        ),
        (
            "0-2-abc.raw",
            'content_path: "0-2-abc.raw": expected 40 hex digits of SHA1 (got "abc")',
        ),
        (
            f"0-2-{ZERO40}.bz2",
            'compression_codec: unrecognized compression extension ".bz2"',
        ),
        (
            f"5-2-{ZERO40}.raw",
            "begin: expected 0 <= begin <= end (got begin 5, end 2)",
        ),
        (
            f"a//b/0-2-{ZERO40}.raw",
            'path_postfix: "a//b" must be a clean path (no "//", no "." or ".." segments, '
            'no trailing "/")',
        ),
        (
            f"a b/0-2-{ZERO40}.raw",
            'path_postfix: invalid character " " at index 1 of "a b" '
            "(allowed: letters, numbers and -_+/.=%)",
        ),
    ],
)
def test_parse_content_path_rejects_junk(relpath: str, message: str) -> None:
    with pytest.raises(ValidationError) as info:
        parse_content_path("my/journal", relpath)
    assert str(info.value) == message


def test_validate_fragment_accepts_listed_fragment() -> None:
    fragment = pb.Fragment(
        journal="my/journal",
        begin=0,
        end=5,
        sum=HELLO_SUM,
        compression_codec=pb.GZIP,
        backing_store="s3://bucket/prefix/",
        mod_time=1_700_000_000,
        path_postfix="a=1/b=2",
    )
    validate_fragment(fragment)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"journal": "a/b"},
            'commit.journal: invalid length of "a/b": expected 4 <= length <= 512 bytes (got 3)',
        ),
        (
            {"begin": -1, "end": 0},
            "commit.begin: expected 0 <= begin <= end (got begin -1, end 0)",
        ),
        (
            {"compression_codec": pb.INVALID},
            "commit.compression_codec: invalid compression codec 0",
        ),
        ({"compression_codec": 9}, "commit.compression_codec: invalid compression codec 9"),
        (
            {"backing_store": "s3://bucket"},
            'commit.backing_store: path of store URL "s3://bucket" must end in "/"',
        ),
        ({"mod_time": -3}, "commit.mod_time: expected mod_time >= 0 (got -3)"),
        (
            {"path_postfix": "/abs"},
            'commit.path_postfix: "/abs" must not begin with "/"',
        ),
    ],
)
def test_validate_fragment_errors(fields: dict[str, object], message: str) -> None:
    base: dict[str, object] = {
        "journal": "my/journal",
        "begin": 0,
        "end": 10,
        "compression_codec": pb.NONE,
    }
    fragment = pb.Fragment(**{**base, **fields})  # type: ignore[arg-type]
    with pytest.raises(ValidationError) as info:
        validate_fragment(fragment, "commit")
    assert str(info.value) == message
