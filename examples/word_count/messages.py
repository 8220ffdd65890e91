"""The word-count message: a delta to one N-gram's count, as a JSON line."""

from __future__ import annotations

from gazette_core.message.structs import StructMessage


class NGramCount(StructMessage):
    n_gram: str = ""
    count: int = 0
