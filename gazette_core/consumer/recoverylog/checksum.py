"""The recovery-log checksum chain: CRC-32C (Castagnoli) over frame bodies.

Each op carries the chain value *before* it; applying the op continues the
chain over the exact body bytes read (never a re-encoding), as Go's
`crc32.Update` does. The C-backed `google-crc32c` keeps playback cheap.
"""

from __future__ import annotations

import google_crc32c


def chain(previous: int, body: bytes) -> int:
    """CRC-32C of `body` continuing from the chain value `previous`."""
    return int(google_crc32c.extend(previous, body))


def implementation() -> str:
    """"c" when the C extension is in use, "python" for the slow fallback."""
    return str(google_crc32c.implementation)
