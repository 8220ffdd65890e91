"""The word-count message: a delta to one N-gram's count, as a JSON line."""

from __future__ import annotations

from dataclasses import dataclass

from gazette_core.message.interfaces import JSONMessage


@dataclass
class NGramCount(JSONMessage):
    uuid: str = ""
    n_gram: str = ""
    count: int = 0
