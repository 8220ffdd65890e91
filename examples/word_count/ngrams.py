"""N-grams of a text, and the key that places an N-gram (and a query) on one partition.

Words are lowercase runs of letters, digits and apostrophes. A text yields its
words (1-grams) and each pair of adjacent words (2-grams), both keyed by their
first word, so a query for a word and what follows it is answered by one shard.
"""

from __future__ import annotations

import re
from collections import Counter
from itertools import pairwise

WORD = re.compile(r"[a-z0-9']+")


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def count_ngrams(text: str) -> Counter[str]:
    """N-gram -> occurrences in `text`, for N = 1 and 2 ("the", "the cat")."""
    ws = words(text)
    grams = Counter(ws)
    grams.update(f"{a} {b}" for a, b in pairwise(ws))
    return grams


def key(n_gram_or_prefix: str) -> str:
    """The routing key: the first word (a query prefix must start with a whole word)."""
    ws = words(n_gram_or_prefix)
    if not ws:
        raise ValueError(f"no word in {n_gram_or_prefix!r}")
    return ws[0]


def matches(n_gram: str, prefix: str) -> bool:
    """Whether `n_gram` answers a query for `prefix`: same first word, then the prefix."""
    return key(n_gram) == key(prefix) and n_gram.startswith(prefix.lower().strip())
