"""Fragment content addressing: SHA1Sum conversions, codec extensions, content names.

A persisted fragment is named `<begin>-<end>-<sha1><ext>` (16-digit hex offsets,
40-digit hex SHA1 of the uncompressed content) under `<journal>/<postfix>/`.
Stores list those names back, so parsing is the exact inverse of naming.
"""

from __future__ import annotations

import re
import struct

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.names_ext import (
    MAX_JOURNAL_NAME_LEN,
    quote,
    validate_journal_name,
    validate_path_component,
    validate_store_url,
)
from gazette_core.errors import ValidationError

_SUM_LAYOUT = struct.Struct(">QQI")
_HEX40 = re.compile(r"[0-9a-fA-F]{40}")
_HEX = re.compile(r"[0-9a-fA-F]+")

_EXTENSIONS: dict[int, str] = {
    pb.NONE: ".raw",
    pb.GZIP: ".gz",
    pb.ZSTANDARD: ".zst",
    pb.SNAPPY: ".sz",
    # The proto comment names `.gzod`, but Go writes no extension; we match Go.
    pb.GZIP_OFFLOAD_DECOMPRESSION: "",
}
_CODECS_BY_EXTENSION: dict[str, pb.CompressionCodec.ValueType] = {
    ".raw": pb.NONE,
    ".gz": pb.GZIP,
    ".gzip": pb.GZIP,
    ".zst": pb.ZSTANDARD,
    ".zstandard": pb.ZSTANDARD,
    ".sz": pb.SNAPPY,
    ".snappy": pb.SNAPPY,
    "": pb.GZIP_OFFLOAD_DECOMPRESSION,
    ".gzod": pb.GZIP_OFFLOAD_DECOMPRESSION,
}


def sha1_to_sum(digest: bytes) -> pb.SHA1Sum:
    """The SHA1Sum of a 20-byte digest (big-endian parts)."""
    if len(digest) != 20:
        raise ValidationError("sum", f"expected a 20-byte SHA1 digest (got {len(digest)} bytes)")
    part1, part2, part3 = _SUM_LAYOUT.unpack(digest)
    return pb.SHA1Sum(part1=part1, part2=part2, part3=part3)


def sum_to_digest(s: pb.SHA1Sum) -> bytes:
    """The 20-byte digest a SHA1Sum encodes."""
    return _SUM_LAYOUT.pack(s.part1, s.part2, s.part3)


def sum_to_hex(s: pb.SHA1Sum) -> str:
    """40 lowercase hex digits of a SHA1Sum."""
    return sum_to_digest(s).hex()


def sum_from_hex(text: str) -> pb.SHA1Sum:
    """Parse 40 hex digits (either case) into a SHA1Sum."""
    if not _HEX40.fullmatch(text):
        raise ValidationError("sum", f"expected 40 hex digits (got {quote(text)})")
    return sha1_to_sum(bytes.fromhex(text))


def sum_is_zero(s: pb.SHA1Sum) -> bool:
    """Whether the sum is all-zero (the sum of an empty fragment)."""
    return s.part1 == 0 and s.part2 == 0 and s.part3 == 0


def codec_valid(codec: int) -> bool:
    """Whether `codec` is a known CompressionCodec other than INVALID."""
    return codec in _EXTENSIONS


def codec_extension(codec: int) -> str:
    """File extension written for `codec` ("" for GZIP_OFFLOAD_DECOMPRESSION)."""
    if codec not in _EXTENSIONS:
        raise ValidationError("compression_codec", f"invalid compression codec {codec}")
    return _EXTENSIONS[codec]


def codec_from_extension(ext: str) -> pb.CompressionCodec.ValueType:
    """The codec of a file extension such as ".gz" (case-insensitive, aliases accepted)."""
    codec = _CODECS_BY_EXTENSION.get(ext.lower())
    if codec is None:
        raise ValidationError(
            "compression_codec", f"unrecognized compression extension {quote(ext)}"
        )
    return codec


def content_name(fragment: pb.Fragment) -> str:
    """`<begin:016x>-<end:016x>-<sha1 hex><ext>` of a fragment."""
    return (
        f"{fragment.begin:016x}-{fragment.end:016x}-{sum_to_hex(fragment.sum)}"
        f"{codec_extension(fragment.compression_codec)}"
    )


def content_path(fragment: pb.Fragment) -> str:
    """`<journal>/<path_postfix>/<content name>`, skipping an empty postfix."""
    parts = [fragment.journal, fragment.path_postfix, content_name(fragment)]
    return "/".join(p for p in parts if p)


def _parse_offset(text: str, relpath: str) -> int:
    if not _HEX.fullmatch(text):
        raise ValidationError(
            "content_path", f"{quote(relpath)}: expected a hex offset (got {quote(text)})"
        )
    return int(text, 16)


def parse_content_path(journal: str, relpath: str) -> pb.Fragment:
    """The Fragment named by `relpath`, a store path relative to `<journal>/`.

    The directory part (if any) is the path postfix. `backing_store` and
    `mod_time` are left for the caller, which knows the listing.
    """
    postfix, _, name = relpath.rpartition("/")
    stem, dot, ext = name.rpartition(".")
    if not dot:
        stem, ext = name, ""
    else:
        ext = "." + ext
    fields = stem.split("-")
    if len(fields) != 3:
        raise ValidationError(
            "content_path",
            f"{quote(relpath)}: expected a name of the form <begin>-<end>-<sha1><ext>",
        )
    begin = _parse_offset(fields[0], relpath)
    end = _parse_offset(fields[1], relpath)
    if not _HEX40.fullmatch(fields[2]):
        raise ValidationError(
            "content_path",
            f"{quote(relpath)}: expected 40 hex digits of SHA1 (got {quote(fields[2])})",
        )
    fragment = pb.Fragment(
        journal=journal,
        begin=begin,
        end=end,
        sum=sum_from_hex(fields[2]),
        compression_codec=codec_from_extension(ext),
        path_postfix=postfix,
    )
    validate_fragment(fragment)
    return fragment


def _join(path: str, field: str) -> str:
    return f"{path}.{field}" if path else field


def validate_fragment(f: pb.Fragment, path: str = "") -> None:
    """Validate a Fragment; errors carry `path` joined with the field name."""
    validate_journal_name(f.journal, _join(path, "journal"))
    if f.begin < 0 or f.begin > f.end:
        raise ValidationError(
            _join(path, "begin"), f"expected 0 <= begin <= end (got begin {f.begin}, end {f.end})"
        )
    if not codec_valid(f.compression_codec):
        raise ValidationError(
            _join(path, "compression_codec"), f"invalid compression codec {f.compression_codec}"
        )
    if f.backing_store:
        validate_store_url(f.backing_store, _join(path, "backing_store"))
    if f.mod_time < 0:
        raise ValidationError(_join(path, "mod_time"), f"expected mod_time >= 0 (got {f.mod_time})")
    validate_path_component(f.path_postfix, 0, MAX_JOURNAL_NAME_LEN, _join(path, "path_postfix"))
