"""How many arrived calls a gRPC server holds until its event loop takes them.

gRPC's core queues each call that arrives until the asyncio server asks for
it, one at a time on the event loop. Past 1000 queued calls it drops new ones
at random, surely past 3000, and the client sees CANCELLED: a burst of a few
thousand concurrent calls (say `List` from many clients at once) loses some
of them at once, however cheap the calls are. Brokers and consumers raise
both limits to BACKLOG so such a burst waits its turn instead. Each queued
call holds only its headers and request (some kilobytes for the small
unary requests of a burst). Past BACKLOG, calls are still dropped with
CANCELLED, which the library's clients treat as transient (UnavailableError).
"""

from __future__ import annotations

BACKLOG = 1 << 14


def server_options() -> tuple[tuple[str, int], ...]:
    """Server channel arguments holding up to BACKLOG calls, none dropped before that."""
    return (("grpc.server.max_pending_requests", BACKLOG),
            ("grpc.server.max_pending_requests_hard_limit", BACKLOG))
