"""Keepalive of connections between Gazette processes, so that a silent peer is noticed.

A frozen or partitioned broker keeps its TCP connections open; without pings a
Replicate stream from it would hold its replica's spool for ever, and a
pipeline to it would wait out every acknowledgement timeout. So brokers (and
consumers, towards brokers and each other) send HTTP/2 pings every
PING_INTERVAL_MS on connections with calls open, idle streams included, as
servers and as clients, and drop a connection whose ping goes unanswered for
PING_TIMEOUT_MS: every call on it then fails UNAVAILABLE and the channel
reconnects.

Our servers accept such pings, from anyone and at any rate (gRPC's default
policy would answer them with GOAWAY). A Go Gazette server does not: it runs
grpc-go's default enforcement, which counts a "strike" for each client ping
less than 5 minutes after the previous one, and after more than two strikes
sends GOAWAY "too_many_pings" and closes the connection. But it forgives a
ping that follows anything it wrote itself (headers or data), whatever its
configuration, and so do gRPC's C-core and Java servers. So while a peer
channel is connected it also probes the peer every half ping interval: a
unary call to PROBE_METHOD, which no server implements. The peer answers
UNIMPLEMENTED at once (no handler runs, nothing is logged or counted), and
the headers of that answer make the next ping welcome. A silent peer answers
neither probe nor ping, and the ping's timeout drops the connection as
before. The cost is one call per half interval per connected peer channel.

Why not drop the pings (or space them 5 minutes apart) and have a probe
that goes unanswered cancel the calls waiting on its peer? Every call site
(pipelines, proxies, consumers' reads and appends) would then have to tell
which calls wait on which peer, and turn a local cancellation, which grpc.aio
raises as CancelledError, into the UNAVAILABLE a dropped connection gives
today. With pings, failure detection stays in the transport: one mechanism
for every call on the connection, failing as it always has.
"""

from __future__ import annotations

import asyncio
import contextlib

import grpc

from gazette_core.broker.client.channel import ClientConfig
from gazette_core.server.client_auth import CallAuth
from gazette_core.server.tls import ClientTLS

# A ping after this long without one (ms), and how long its answer may take
# (gRPC waits for the longer of keepalive_timeout_ms and ping_timeout_ms).
PING_INTERVAL_MS = 10_000
PING_TIMEOUT_MS = 5_000
# A method no Gazette server implements: its answer is UNIMPLEMENTED.
PROBE_METHOD = "/gazette.Liveness/Probe"

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
    """Client channel arguments of a process's connections to its peers."""
    return (("grpc.keepalive_time_ms", PING_INTERVAL_MS),
            ("grpc.keepalive_timeout_ms", PING_TIMEOUT_MS),
            ("grpc.http2.max_pings_without_data", 0),
            ("grpc.http2.ping_timeout_ms", PING_TIMEOUT_MS),
            ("grpc.keepalive_permit_without_calls", 0))


def peer_config(tls: ClientTLS | None = None, auth: CallAuth | None = None) -> ClientConfig:
    """The ClientConfig of peer connections: pings, and the probes that make them welcome."""
    return ClientConfig(tls=tls or ClientTLS(), auth=auth, options=peer_options(),
                        watch=probe_while_connected)


async def probe_while_connected(channel: grpc.aio.Channel) -> None:
    """Probe `channel`'s server every half ping interval while connected, until it closes.

    Probing only a READY channel never makes it connect: a channel nobody
    uses stays idle, and one to a peer that is gone waits for a caller.
    """
    probe = channel.unary_unary(PROBE_METHOD, request_serializer=None,
                                response_deserializer=None)
    try:
        while (state := channel.get_state()) != grpc.ChannelConnectivity.SHUTDOWN:
            if state != grpc.ChannelConnectivity.READY:
                await channel.wait_for_state_change(state)
                continue
            every = PING_INTERVAL_MS / 2000
            with contextlib.suppress(grpc.aio.AioRpcError):  # any answer, or none, will do
                await probe(b"", timeout=every)
            await asyncio.sleep(every)
    except grpc.aio.UsageError:
        pass  # the channel closed meanwhile
