"""The files gazctl reads whole: YAML specs, the edit buffer, `--offsets`, gazctl.ini.

Each is read within MAX_INPUT_BYTES and must be UTF-8. The bound is checked
before parsing, and only that many bytes (plus one) are ever read, so a huge
file or an endless stdin fails at once instead of after minutes of parsing:
the YAML parser takes seconds per megabyte. Either failure names the file
and is a ValidationError (exit 1: the contents of an input are invalid).
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from gazette_core.errors import ValidationError

MAX_INPUT_BYTES = 4 << 20
LIMIT_TEXT = "4 MiB"


def read_bounded(source: BinaryIO, name: str, what: str,
                 limit: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of `source`, refused past `limit` bytes.

    `name` is the option or setting the file came from, `what` how the error
    names the file (its path, or stdin).
    """
    data = source.read(limit + 1)
    if len(data) > limit:
        raise ValidationError(name, f"{what} is larger than the {_limit_text(limit)} gazctl "
                                    "reads; split it into smaller files")
    return decode(data, name, what)


def read_file(path: Path, name: str, limit: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of the file at `path` (see `read_bounded`); OSError if it cannot
    be opened."""
    with path.open("rb") as source:
        return read_bounded(source, name, repr(str(path)), limit)


def decode(data: bytes, name: str, what: str) -> str:
    """`data` as UTF-8 text; the error gives the first bad byte's line and offset."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ValidationError(name, f"{what} is not UTF-8 text: byte 0x{data[exc.start]:02x} "
                                    f"at line {line}, offset {exc.start}") from None


def _limit_text(limit: int) -> str:
    return LIMIT_TEXT if limit == MAX_INPUT_BYTES else f"{limit} bytes"
