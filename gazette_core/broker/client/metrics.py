"""Prometheus metrics of the journal client, under Go's names: any process that appends
or reads journals (brokers too: their HTTP gateway does both) exposes them.

- `gazette_append_bytes_total{journal}`: content bytes appends sent (appender.py).
- `gazette_read_bytes_total{journal}`: content bytes readers returned (reader.py),
  through the broker or straight from a fragment's store.
- Reading a persisted fragment from its store (fragment/remote.py: a broker
  serving a Read, or a client reading a `fragment_url`), by `{journal,codec}`
  (codec: the CompressionCodec's name): `gazette_fragment_open_total` (opens),
  `gazette_fragment_open_bytes_total` (journal bytes of the fragments opened),
  `gazette_fragment_open_content_length_total` (stored bytes read of them),
  `gazette_read_fragment_bytes_total` (content bytes read from them) and
  `gazette_discard_fragment_bytes_total` (content read and discarded to reach
  the offset asked for).
"""

from __future__ import annotations

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.metrics.families import Counter

APPEND_BYTES = Counter("gazette_append_bytes_total", "Content bytes appended to journals.",
                       ("journal",))
READ_BYTES = Counter("gazette_read_bytes_total", "Content bytes read from journals.",
                     ("journal",))
FRAGMENT_LABELS = ("journal", "codec")
FRAGMENT_OPEN = Counter("gazette_fragment_open_total",
                        "Persisted fragments opened for reading.", FRAGMENT_LABELS)
FRAGMENT_OPEN_BYTES = Counter("gazette_fragment_open_bytes_total",
                              "Journal bytes of the persisted fragments opened for reading.",
                              FRAGMENT_LABELS)
FRAGMENT_OPEN_CONTENT_LENGTH = Counter(
    "gazette_fragment_open_content_length_total",
    "Stored (possibly compressed) bytes read of persisted fragments.", FRAGMENT_LABELS)
READ_FRAGMENT_BYTES = Counter("gazette_read_fragment_bytes_total",
                              "Content bytes read from persisted fragments.", FRAGMENT_LABELS)
DISCARD_FRAGMENT_BYTES = Counter(
    "gazette_discard_fragment_bytes_total",
    "Content bytes of persisted fragments read and discarded to reach an offset.",
    FRAGMENT_LABELS)


class FragmentMeters:
    """The series of one opened fragment; counts the open itself."""

    __slots__ = ("discarded", "read", "stored")

    def __init__(self, fragment: pb.Fragment, codec: int | None = None) -> None:
        labels = (fragment.journal,
                  _codec_name(fragment.compression_codec if codec is None else codec))
        FRAGMENT_OPEN.cell(*labels).value += 1
        FRAGMENT_OPEN_BYTES.cell(*labels).value += fragment.end - fragment.begin
        self.stored = FRAGMENT_OPEN_CONTENT_LENGTH.cell(*labels)
        self.read = READ_FRAGMENT_BYTES.cell(*labels)
        self.discarded = DISCARD_FRAGMENT_BYTES.cell(*labels)


def _codec_name(codec: int) -> str:
    """The CompressionCodec's name, as Go labels it (its number if it has none)."""
    if codec in pb.CompressionCodec.values():
        return pb.CompressionCodec.Name(codec)  # type: ignore[arg-type]
    return str(codec)
