"""Stream-sum: exactly-once sums of streams of chunks, and the soak test of consumers.

`gazette consumer --app examples.stream_sum:Summer` runs the summer; the
chunker (`python -m examples.stream_sum.chunker`) publishes streams and checks
their sums. See README.md.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    # Imported on first use, so the CRC and tally modules load without the framework.
    if name == "Summer":
        from examples.stream_sum.summer import Summer
        return Summer
    raise AttributeError(name)
