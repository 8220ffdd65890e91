"""HTTP/2 keepalive of broker-to-broker connections, so that a silent peer is noticed.

A frozen or partitioned broker keeps its TCP connections open; without pings a
Replicate stream from it would hold its replica's spool for ever, and a
pipeline to it would wait out every acknowledgement timeout. Brokers ping
their peers, as servers and as clients, even on idle streams, and drop a
connection whose ping goes unanswered. Their servers accept such pings
(gRPC's default policy would answer them with GOAWAY).
"""

from __future__ import annotations

# A ping after this long without one (ms), and how long its answer may take
# (gRPC waits for the longer of keepalive_timeout_ms and ping_timeout_ms).
PING_INTERVAL_MS = 10_000
PING_TIMEOUT_MS = 5_000

Options = tuple[tuple[str, int], ...]


def server_options() -> Options:
    """Server channel arguments: ping clients with open calls, and accept their pings."""
    return (("grpc.keepalive_time_ms", PING_INTERVAL_MS),
            ("grpc.keepalive_timeout_ms", PING_TIMEOUT_MS),
            ("grpc.http2.max_pings_without_data", 0),  # idle streams too
            ("grpc.http2.ping_timeout_ms", PING_TIMEOUT_MS),
            ("grpc.http2.min_ping_interval_without_data_ms", PING_INTERVAL_MS // 2),
            ("grpc.http2.max_ping_strikes", 0))  # a client pinging more often is tolerated


def peer_options() -> Options:
    """Client channel arguments of a broker's connections to its peers."""
    return (("grpc.keepalive_time_ms", PING_INTERVAL_MS),
            ("grpc.keepalive_timeout_ms", PING_TIMEOUT_MS),
            ("grpc.http2.max_pings_without_data", 0),
            ("grpc.http2.ping_timeout_ms", PING_TIMEOUT_MS),
            ("grpc.keepalive_permit_without_calls", 0))
