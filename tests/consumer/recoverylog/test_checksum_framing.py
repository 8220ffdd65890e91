"""CRC-32C chain known answers, frame encoding, magic resync and author labels."""

from __future__ import annotations

import pytest

from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.consumer.recoverylog.author import (
    author_label,
    fence,
    fence_selector,
    new_author,
)
from gazette_core.consumer.recoverylog.checksum import chain, implementation
from gazette_core.consumer.recoverylog.framing import (
    HEADER_LEN,
    MAGIC,
    FrameError,
    body_length,
    encode,
    find_magic,
)


def test_crc32c_known_answers() -> None:
    assert chain(0, b"123456789") == 0xE3069283
    assert chain(0, b"") == 0
    assert chain(0, bytes(32)) == 0x8A9136AA  # RFC 3720 B.4: 32 bytes of zeroes
    assert chain(0, b"\xff" * 32) == 0x62A8AB43  # RFC 3720 B.4: 32 bytes of 0xff


def test_crc32c_chains_incrementally() -> None:
    data = bytes(range(256)) * 5
    assert chain(chain(chain(0, data[:7]), data[7:300]), data[300:]) == chain(0, data)
    assert chain(0x12345678, b"") == 0x12345678


def test_crc32c_is_the_c_implementation() -> None:
    assert implementation() == "c"


def test_frame_layout_and_body_length() -> None:
    op = rpb.RecordedOp(seq_no=3, checksum=7, author=9, create=rpb.RecordedOp.Create(path="/a"))
    frame, body = encode(op)
    assert frame[:4] == MAGIC == b"\x66\x33\x93\x36"
    assert int.from_bytes(frame[4:8], "little") == len(body) == body_length(frame[:HEADER_LEN])
    assert frame[HEADER_LEN:] == body
    assert rpb.RecordedOp.FromString(body) == op


def test_bad_magic_and_resync() -> None:
    frame, _ = encode(rpb.RecordedOp(seq_no=1, author=1))
    garbage = b"\x00\x01garbage\x66\x33"
    with pytest.raises(FrameError, match="magic"):
        body_length(garbage[:HEADER_LEN])
    with pytest.raises(FrameError, match="short"):
        body_length(MAGIC)
    buf = garbage + frame + frame
    assert find_magic(buf) == len(garbage)
    assert find_magic(buf, len(garbage) + 1) == len(garbage) + len(frame)
    assert find_magic(b"no magic here") == -1


def test_author_labels_match_go_format_uint_base_32() -> None:
    assert author_label(1) == "1"
    assert author_label(31) == "v"
    assert author_label(32) == "10"
    assert author_label(0xFFFFFFFF) == "3vvvvvv"
    assert author_label(3418428788) == format_base32(3418428788)
    labels = fence(32).labels
    assert [(lb.name, lb.value) for lb in labels] == [("author", "10")]
    assert fence_selector(32).include == fence(32)
    assert all(1 <= new_author() <= 0xFFFFFFFF for _ in range(100))


def format_base32(x: int) -> str:
    """Reference: int(label, 32) must invert the label."""
    label = author_label(x)
    assert int(label, 32) == x
    return label
