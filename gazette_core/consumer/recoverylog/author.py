"""Recorder authors and the `author` journal register that fences them.

An author is a random non-zero uint32 stamped on every op a recorder writes.
A new primary claims a log by appending with the union register
`author=<base32>`; every later append of its recorder checks that register,
so a zombie recorder of an older author is rejected by the broker.
"""

from __future__ import annotations

import secrets

from gazette_core.broker.protocol import protocol_pb2 as pb

AUTHOR_LABEL = "author"
_DIGITS = "0123456789abcdefghijklmnopqrstuv"
_MAX_AUTHOR = 2**32 - 1


def new_author() -> int:
    """A random author in 1..2^32-1 (0 means "no author")."""
    return 1 + secrets.randbelow(_MAX_AUTHOR)


def author_label(author: int) -> str:
    """`author` in base 32 with digits 0-9a-v, as Go's strconv.FormatUint(x, 32)."""
    if author == 0:
        return "0"
    digits: list[str] = []
    while author:
        author, rem = divmod(author, 32)
        digits.append(_DIGITS[rem])
    return "".join(reversed(digits))


def fence(author: int) -> pb.LabelSet:
    """The register set `author=<base32>` to union when claiming a log."""
    return pb.LabelSet(labels=[pb.Label(name=AUTHOR_LABEL, value=author_label(author))])


def fence_selector(author: int) -> pb.LabelSelector:
    """The check_registers selector every append of `author`'s recorder carries."""
    return pb.LabelSelector(include=fence(author))
