"""Decoding of one Etcd value of either kind of cluster into a validated message.

Every failure is a ValueError naming the key, so the KeySpace logs and
ignores the key rather than mirroring a value it cannot use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from google.protobuf.message import DecodeError, Message

M = TypeVar("M", bound=Message)


def decode_value(kind: str, key: str, value: bytes, message: type[M],
                 validate: Callable[[M], None] | None = None) -> M:
    """`value` parsed as a `message` and validated; `kind` names the key in errors."""
    try:
        decoded = message.FromString(value)
    except DecodeError as exc:
        raise ValueError(f"{kind} {key!r}: invalid {message.DESCRIPTOR.name}: {exc}") from exc
    if validate is not None:
        try:
            validate(decoded)
        except ValueError as exc:
            raise ValueError(f"{kind} {key!r}: {exc}") from exc
    return decoded
