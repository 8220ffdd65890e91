"""Word-count: N-gram counts behind a custom gRPC API served by the consumers themselves.

`gazette consumer --app examples.word_count:Counter` runs it; see README.md.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    # Imported on first use, so the n-gram and API modules load without the framework.
    if name == "Counter":
        from examples.word_count.counter import Counter
        return Counter
    raise AttributeError(name)
