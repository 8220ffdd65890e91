"""Round trips and error paths of the streaming fragment codecs."""

from __future__ import annotations

import gzip
import os

import cramjam
import pytest
import zstandard

from gazette_core.broker.codecs import (
    CodecError,
    compress,
    decompress,
    new_compressor,
    new_decompressor,
)
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import ValidationError

CODECS = [pb.NONE, pb.GZIP, pb.GZIP_OFFLOAD_DECOMPRESSION, pb.ZSTANDARD, pb.SNAPPY]
# Compressible and incompressible parts, larger than snappy's 64 KiB chunks.
CONTENT = b"journal content line\n" * 20000 + os.urandom(150_000)


def _in_pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


@pytest.mark.parametrize("codec", CODECS)
def test_streaming_round_trip_with_odd_split_points(codec: int) -> None:
    comp = new_compressor(codec)
    encoded = b"".join(comp.compress(p) for p in _in_pieces(CONTENT, 70_001)) + comp.finish()
    dec = new_decompressor(codec)
    decoded = b"".join(dec.decompress(p) for p in _in_pieces(encoded, 997)) + dec.finish()
    assert decoded == CONTENT


@pytest.mark.parametrize("codec", CODECS)
def test_empty_content_round_trip(codec: int) -> None:
    assert decompress(codec, compress(codec, b"")) == b""


def test_none_is_raw_bytes() -> None:
    assert compress(pb.NONE, b"abc") == b"abc"


@pytest.mark.parametrize("codec", [pb.GZIP, pb.GZIP_OFFLOAD_DECOMPRESSION])
def test_gzip_output_is_standard_gzip(codec: int) -> None:
    assert gzip.decompress(compress(codec, CONTENT)) == CONTENT


@pytest.mark.parametrize("codec", [pb.GZIP, pb.GZIP_OFFLOAD_DECOMPRESSION])
def test_gzip_reads_concatenated_members(codec: int) -> None:
    members = gzip.compress(b"first member|") + gzip.compress(b"") + gzip.compress(b"third")
    dec = new_decompressor(codec)
    decoded = b"".join(dec.decompress(p) for p in _in_pieces(members, 5)) + dec.finish()
    assert decoded == b"first member|third"


def test_zstd_output_is_standard_zstd() -> None:
    encoded = compress(pb.ZSTANDARD, CONTENT)
    reader = zstandard.ZstdDecompressor().stream_reader(encoded)
    assert reader.read() == CONTENT


def test_zstd_reads_concatenated_frames() -> None:
    ctx = zstandard.ZstdCompressor(level=1)
    frames = ctx.compress(b"frame one|") + ctx.compress(b"frame two|") + ctx.compress(b"3")
    dec = new_decompressor(pb.ZSTANDARD)
    decoded = b"".join(dec.decompress(p) for p in _in_pieces(frames, 3)) + dec.finish()
    assert decoded == b"frame one|frame two|3"


def test_snappy_output_is_framed_format() -> None:
    encoded = compress(pb.SNAPPY, CONTENT)
    assert encoded.startswith(b"\xff\x06\x00\x00sNaPpY")
    assert bytes(cramjam.snappy.decompress(encoded)) == CONTENT


def test_snappy_reads_skippable_chunks_and_repeated_identifiers() -> None:
    framed = bytes(cramjam.snappy.compress(b"hello "))
    padding = b"\xfe\x03\x00\x00xyz"
    stream = framed + padding + bytes(cramjam.snappy.compress(b"world"))
    assert decompress(pb.SNAPPY, stream) == b"hello world"


def test_snappy_rejects_stream_without_identifier() -> None:
    framed = bytes(cramjam.snappy.compress(b"hello"))
    with pytest.raises(CodecError) as exc:
        decompress(pb.SNAPPY, framed[10:])
    assert str(exc.value) == "snappy: stream does not begin with a stream identifier"


def test_snappy_rejects_reserved_unskippable_chunk() -> None:
    stream = bytes(cramjam.snappy.compress(b"hello")) + b"\x02\x01\x00\x00z"
    with pytest.raises(CodecError) as exc:
        decompress(pb.SNAPPY, stream)
    assert str(exc.value) == "snappy: unsupported unskippable chunk type 0x02"


@pytest.mark.parametrize(
    ("codec", "message"),
    [
        (pb.GZIP, "gzip: unexpected end of compressed stream"),
        (pb.ZSTANDARD, "zstd: unexpected end of compressed stream"),
        (pb.SNAPPY, "snappy: unexpected end of compressed stream"),
    ],
)
def test_truncated_stream_fails_at_finish(codec: int, message: str) -> None:
    encoded = compress(codec, CONTENT)
    dec = new_decompressor(codec)
    dec.decompress(encoded[: len(encoded) // 2])
    with pytest.raises(CodecError) as exc:
        dec.finish()
    assert str(exc.value) == message


def test_corrupt_gzip_raises_codec_error() -> None:
    with pytest.raises(CodecError) as exc:
        decompress(pb.GZIP, b"not gzip at all")
    assert str(exc.value) == "gzip: Error -3 while decompressing data: incorrect header check"


@pytest.mark.parametrize(
    ("codec", "message"),
    [
        (pb.INVALID, "compression_codec: invalid codec (INVALID)"),
        (42, "compression_codec: invalid codec (42)"),
    ],
)
def test_invalid_codec_is_a_validation_error(codec: int, message: str) -> None:
    with pytest.raises(ValidationError) as exc:
        new_compressor(codec)
    assert str(exc.value) == message
    with pytest.raises(ValidationError) as exc:
        new_decompressor(codec)
    assert str(exc.value) == message
