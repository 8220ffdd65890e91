"""Streaming compressors and decompressors for fragment file contents.

Each `CompressionCodec` maps to one on-disk format (docs/design/fragments.md#codecs):
NONE is raw bytes, GZIP and GZIP_OFFLOAD_DECOMPRESSION are gzip (readers
accept multi-member files), ZSTANDARD is a sequence of zstd frames, SNAPPY is
the framed snappy stream format. All objects are incremental: feed chunks,
collect output, then call `finish()` once.
"""

from __future__ import annotations

import zlib
from typing import Protocol

import cramjam
import zstandard

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import GazetteError, ValidationError

ZSTD_LEVEL = 3
# Go's compress/gzip default level; sizes stay comparable with Go-written files.
GZIP_LEVEL = 6
_GZIP_WBITS = 31  # zlib: gzip header and trailer.
_SNAPPY_IDENTIFIER = b"\xff\x06\x00\x00sNaPpY"
_SNAPPY_COMPRESSED = 0x00
_SNAPPY_UNCOMPRESSED = 0x01


class CodecError(GazetteError):
    """Compressed content is corrupt or truncated."""


class Compressor(Protocol):
    """Incremental compressor: `compress` chunks, then `finish` exactly once."""

    def compress(self, data: bytes) -> bytes: ...

    def finish(self) -> bytes: ...


class Decompressor(Protocol):
    """Incremental decompressor: `decompress` chunks, then `finish` exactly once."""

    def decompress(self, data: bytes) -> bytes: ...

    def finish(self) -> bytes: ...


class _RawCompressor:
    def compress(self, data: bytes) -> bytes:
        return bytes(data)

    def finish(self) -> bytes:
        return b""


class _RawDecompressor:
    def decompress(self, data: bytes) -> bytes:
        return bytes(data)

    def finish(self) -> bytes:
        return b""


class _GzipCompressor:
    """Writes a single gzip member; readers of every codec accept that."""

    def __init__(self) -> None:
        self._obj = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, _GZIP_WBITS)

    def compress(self, data: bytes) -> bytes:
        return self._obj.compress(data)

    def finish(self) -> bytes:
        return self._obj.flush(zlib.Z_FINISH)


class _GzipDecompressor:
    """Reads concatenated gzip members, starting a fresh inflater per member."""

    def __init__(self) -> None:
        self._obj = zlib.decompressobj(_GZIP_WBITS)
        self._in_member = False

    def decompress(self, data: bytes) -> bytes:
        out: list[bytes] = []
        while data:
            self._in_member = True
            try:
                out.append(self._obj.decompress(data))
            except zlib.error as exc:
                raise CodecError(f"gzip: {exc}") from exc
            if not self._obj.eof:
                break
            data = self._obj.unused_data
            self._obj = zlib.decompressobj(_GZIP_WBITS)
            self._in_member = False
        return b"".join(out)

    def finish(self) -> bytes:
        if self._in_member:
            raise CodecError("gzip: unexpected end of compressed stream")
        return b""


class _ZstdCompressor:
    def __init__(self) -> None:
        self._obj = zstandard.ZstdCompressor(level=ZSTD_LEVEL).compressobj()

    def compress(self, data: bytes) -> bytes:
        return self._obj.compress(data)

    def finish(self) -> bytes:
        return self._obj.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH)


class _ZstdDecompressor:
    """Reads concatenated zstd frames, one decompression object per frame.

    Restarting per frame (rather than `read_across_frames`) lets `finish`
    tell a clean frame boundary from a truncated frame.
    """

    def __init__(self) -> None:
        self._ctx = zstandard.ZstdDecompressor()
        self._obj = self._ctx.decompressobj()
        self._in_frame = False

    def decompress(self, data: bytes) -> bytes:
        out: list[bytes] = []
        while data:
            self._in_frame = True
            try:
                out.append(self._obj.decompress(data))
            except zstandard.ZstdError as exc:
                raise CodecError(f"zstd: {exc}") from exc
            if not self._obj.eof:
                break
            data = self._obj.unused_data
            self._obj = self._ctx.decompressobj()
            self._in_frame = False
        return b"".join(out)

    def finish(self) -> bytes:
        if self._in_frame:
            raise CodecError("zstd: unexpected end of compressed stream")
        return b""


class _SnappyCompressor:
    """Framed snappy; each call flushes its input as complete chunks."""

    def __init__(self) -> None:
        self._obj = cramjam.snappy.Compressor()

    def compress(self, data: bytes) -> bytes:
        if not data:
            return b""
        self._obj.compress(data)
        return bytes(self._obj.flush())

    def finish(self) -> bytes:
        return bytes(self._obj.finish())


class _SnappyDecompressor:
    """Framed snappy reader that accepts input split at arbitrary points.

    cramjam's framed decoder wants whole streams, so this class finds chunk
    boundaries itself and hands each batch of complete data chunks, behind a
    stream identifier, to `cramjam.snappy.decompress` (which checks CRCs).
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self._seen_identifier = False

    def decompress(self, data: bytes) -> bytes:
        self._buf += data
        chunks: list[bytes] = []
        pos = 0
        while len(self._buf) - pos >= 4:
            kind = self._buf[pos]
            length = int.from_bytes(self._buf[pos + 1 : pos + 4], "little")
            if len(self._buf) - pos - 4 < length:
                break
            self._check_chunk(kind, bytes(self._buf[pos + 4 : pos + 4 + length]))
            if kind in (_SNAPPY_COMPRESSED, _SNAPPY_UNCOMPRESSED):
                chunks.append(bytes(self._buf[pos : pos + 4 + length]))
            pos += 4 + length
        del self._buf[:pos]
        if not chunks:
            return b""
        try:
            return bytes(cramjam.snappy.decompress(_SNAPPY_IDENTIFIER + b"".join(chunks)))
        except cramjam.DecompressionError as exc:
            raise CodecError(str(exc)) from exc

    def _check_chunk(self, kind: int, body: bytes) -> None:
        if kind == _SNAPPY_IDENTIFIER[0]:
            if body != _SNAPPY_IDENTIFIER[4:]:
                raise CodecError("snappy: corrupt stream identifier")
            self._seen_identifier = True
        elif not self._seen_identifier:
            raise CodecError("snappy: stream does not begin with a stream identifier")
        elif kind < 0x80 and kind not in (_SNAPPY_COMPRESSED, _SNAPPY_UNCOMPRESSED):
            raise CodecError(f"snappy: unsupported unskippable chunk type {kind:#04x}")

    def finish(self) -> bytes:
        if self._buf:
            raise CodecError("snappy: unexpected end of compressed stream")
        return b""


def new_compressor(codec: int) -> Compressor:
    """A fresh streaming compressor writing `codec`'s file format."""
    if codec == pb.NONE:
        return _RawCompressor()
    if codec in (pb.GZIP, pb.GZIP_OFFLOAD_DECOMPRESSION):
        return _GzipCompressor()
    if codec == pb.ZSTANDARD:
        return _ZstdCompressor()
    if codec == pb.SNAPPY:
        return _SnappyCompressor()
    raise _invalid(codec)


def new_decompressor(codec: int) -> Decompressor:
    """A fresh streaming decompressor reading `codec`'s file format."""
    if codec == pb.NONE:
        return _RawDecompressor()
    if codec in (pb.GZIP, pb.GZIP_OFFLOAD_DECOMPRESSION):
        return _GzipDecompressor()
    if codec == pb.ZSTANDARD:
        return _ZstdDecompressor()
    if codec == pb.SNAPPY:
        return _SnappyDecompressor()
    raise _invalid(codec)


def compress(codec: int, data: bytes) -> bytes:
    """Whole-buffer convenience: `data` compressed with `codec`."""
    comp = new_compressor(codec)
    return comp.compress(data) + comp.finish()


def decompress(codec: int, data: bytes) -> bytes:
    """Whole-buffer convenience: `data` decompressed with `codec`."""
    dec = new_decompressor(codec)
    return dec.decompress(data) + dec.finish()


def _invalid(codec: int) -> ValidationError:
    known = codec in pb.CompressionCodec.values()
    name = pb.CompressionCodec.Name(pb.CompressionCodec.ValueType(codec)) if known else codec
    return ValidationError("compression_codec", f"invalid codec ({name})")
