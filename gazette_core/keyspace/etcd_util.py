"""Thin helpers over aetcd's raw gRPC stubs, keeping etcd response headers.

aetcd's high-level calls drop the ResponseHeader (cluster id, revision, raft
term), which brokers must echo in their own headers, so transactions and
ranges here go through the low-level stubs and return raw responses.

An `https://` endpoint is dialed over TLS (`--etcd.cert-file` and friends),
which aetcd's own client cannot do: `TLSClient` is that client on a secure channel.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from urllib.parse import urlsplit

import aetcd
import grpc
from aetcd import rpc
from aetcd.watcher import Watcher

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import UnavailableError
from gazette_core.server.tls import ClientTLS, client_credentials

DEFAULT_ETCD_PORT = 2379
# Etcd's default --max-txn-ops: the most compares, and the most operations, one
# transaction may have; a larger one is refused with "too many operations in txn request".
MAX_TXN_OPS = 128
# A call to a stopped or partitioned etcd fails after this long rather than
# hanging its caller (an Apply, an allocator round) for ever.
CALL_TIMEOUT_S = 10.0
# Reconnect soon after etcd comes back (within half a second): gRPC's default
# back-off grows to two minutes, far past any lease TTL, and a lease not kept
# alive is lost. "grpc.min_reconnect_backoff_ms" is left alone: gRPC takes it as the time a
# connection attempt has to finish its handshake, and an etcd (or a process)
# short of CPU can take longer than a fraction of a second to answer one.
#
# A keyspace is read with one Range, and a watch catching up may send many
# events at once: either can pass gRPC's default 4 MiB limit on a received
# message (20,000 ordinary shard specs do), and a process that cannot read its
# keyspace cannot start. Etcd is trusted, so its answers are taken at any size
# gRPC can carry, as Go's etcd client takes them.
CHANNEL_OPTIONS = {"grpc.initial_reconnect_backoff_ms": 100,
                   "grpc.max_reconnect_backoff_ms": 500,
                   "grpc.max_receive_message_length": 2**31 - 1}
# Codes meaning "etcd did not answer", as opposed to a refused request.
_TRANSIENT = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})
_MAX_DETAIL = 200


class EtcdUnavailableError(UnavailableError):
    """Etcd could not be reached or did not answer in time; retrying may help."""

    def __init__(self, detail: str) -> None:
        line = " ".join(detail.split())
        self.detail = line if len(line) <= _MAX_DETAIL else line[:_MAX_DETAIL] + "..."
        super().__init__(f"etcd is unavailable: {self.detail}")


@contextlib.contextmanager
def reaching_etcd() -> Iterator[None]:
    """Turn "etcd did not answer" failures of the enclosed calls into EtcdUnavailableError.

    Callers (and gRPC clients of the broker) then see one retriable error
    with a one-line message; a request etcd refused keeps its own error.
    """
    try:
        yield
    except rpc.AioRpcError as exc:
        if exc.code() not in _TRANSIENT:
            raise
        raise EtcdUnavailableError(exc.details() or exc.code().name) from None
    except (aetcd.ConnectionFailedError, aetcd.ConnectionTimeoutError,
            TimeoutError) as exc:
        raise EtcdUnavailableError(str(exc) or "timed out") from None


def _key(key: str | bytes) -> bytes:
    return key.encode() if isinstance(key, str) else key


def host_port(endpoint: str) -> tuple[str, int]:
    """The host and port of an etcd endpoint like "http://127.0.0.1:2379"; ValueError if bad.

    The scheme is http or https.
    """
    try:
        parts = urlsplit(endpoint if "://" in endpoint else f"http://{endpoint}")
        port = parts.port
    except ValueError as exc:  # an unclosed "[", a port out of range
        raise ValueError(f"unsupported etcd endpoint {endpoint!r} ({exc}; want "
                         "http://host:port or https://host:port)") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"unsupported etcd endpoint {endpoint!r} (want http://host:port "
                         "or https://host:port)")
    return parts.hostname, port or DEFAULT_ETCD_PORT


class TLSClient(aetcd.Client):
    """An aetcd client whose channel is secured by `credentials`.

    aetcd dials plaintext only; this makes the same stubs on a TLS channel.
    Username and password authentication (unused here) is not supported.
    """

    def __init__(self, host: str, port: int, credentials: grpc.ChannelCredentials,
                 options: dict[str, int]) -> None:
        super().__init__(host=host, port=port, options=options)
        self._credentials = credentials

    async def connect(self) -> None:
        if self._connected.is_set():
            return
        # Nothing here awaits, so no other task can be half-way through connecting.
        self.channel = grpc.aio.secure_channel(f"{self._host}:{self._port}", self._credentials,
                                               options=list(self._options.items()))
        self.kvstub = rpc.KVStub(self.channel)
        self.clusterstub = rpc.ClusterStub(self.channel)
        self.leasestub = rpc.LeaseStub(self.channel)
        self.maintenancestub = rpc.MaintenanceStub(self.channel)
        self._watcher = Watcher(rpc.WatchStub(self.channel), timeout=self._timeout,
                                metadata=self.metadata)
        self._connected.set()


def new_client(endpoint: str, tls: ClientTLS | None = None) -> aetcd.Client:
    """An unconnected client of `endpoint`: over TLS (with `tls`'s files) when it is https.

    Certificate files that cannot be read raise TLSConfigError.
    """
    host, port = host_port(endpoint)
    if urlsplit(endpoint).scheme != "https":
        return aetcd.Client(host=host, port=port, options=CHANNEL_OPTIONS)
    return TLSClient(host, port, client_credentials(tls or ClientTLS()), CHANNEL_OPTIONS)


async def connect(endpoint: str, tls: ClientTLS | None = None) -> aetcd.Client:
    """A connected client for an endpoint like "http://127.0.0.1:2379" (see `new_client`)."""
    client = new_client(endpoint, tls)
    with reaching_etcd():
        await client.connect()
    return client


async def txn(
    client: aetcd.Client,
    compare: Iterable[rpc.Compare],
    success: Iterable[rpc.RequestOp],
    failure: Iterable[rpc.RequestOp] = (),
) -> rpc.TxnResponse:
    """Run one transaction and return the raw response, header included.

    Raises EtcdUnavailableError when etcd does not answer.
    """
    request = rpc.TxnRequest(compare=list(compare), success=list(success), failure=list(failure))
    with reaching_etcd():
        await client.connect()
        return await client.kvstub.Txn(request, metadata=client.metadata,
                                       timeout=CALL_TIMEOUT_S)


async def get_prefix(client: aetcd.Client, prefix: str) -> rpc.RangeResponse:
    """Every key under `prefix` in key order, with the response header.

    Raises EtcdUnavailableError when etcd does not answer.
    """
    key = _key(prefix)
    request = rpc.RangeRequest(key=key, range_end=prefix_range_end(key))
    with reaching_etcd():
        await client.connect()
        return await client.kvstub.Range(request, metadata=client.metadata,
                                         timeout=CALL_TIMEOUT_S)


def prefix_range_end(prefix: bytes) -> bytes:
    """The exclusive range end covering every key that starts with `prefix`."""
    end = bytearray(prefix)
    while end:
        if end[-1] < 0xFF:
            end[-1] += 1
            return bytes(end)
        end.pop()
    # An empty or all-0xff prefix means "to the end of the keyspace".
    return b"\0"


def header_of(resp_header: rpc.ResponseHeader) -> pb.Header.Etcd:
    """The protocol's Etcd header copied from an etcd ResponseHeader."""
    return pb.Header.Etcd(
        cluster_id=resp_header.cluster_id,
        member_id=resp_header.member_id,
        revision=resp_header.revision,
        raft_term=resp_header.raft_term,
    )


def put_op(key: str | bytes, value: bytes, lease: int = 0, *, ignore_lease: bool = False
           ) -> rpc.RequestOp:
    """A txn op putting `value` at `key`, attached to `lease` when non-zero.

    With `ignore_lease`, the key keeps the lease it already has (another member's).
    """
    return rpc.RequestOp(request_put=rpc.PutRequest(key=_key(key), value=value, lease=lease,
                                                    ignore_lease=ignore_lease))


def delete_op(key: str | bytes) -> rpc.RequestOp:
    """A txn op deleting exactly `key`."""
    return rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(key=_key(key)))


def get_op(key: str | bytes) -> rpc.RequestOp:
    """A txn op reading exactly `key`."""
    return rpc.RequestOp(request_range=rpc.RangeRequest(key=_key(key)))


def _cmp(key: str | bytes, target: int, **value: int) -> rpc.Compare:
    return rpc.Compare(key=_key(key), result=rpc.Compare.EQUAL, target=target, **value)


def cmp_mod_revision(key: str | bytes, rev: int) -> rpc.Compare:
    """Compare: the key's mod revision equals `rev` (0 = absent)."""
    return _cmp(key, rpc.Compare.MOD, mod_revision=rev)


def cmp_create_revision(key: str | bytes, rev: int) -> rpc.Compare:
    """Compare: the key's create revision equals `rev` (0 = absent)."""
    return _cmp(key, rpc.Compare.CREATE, create_revision=rev)


def cmp_version(key: str | bytes, version: int) -> rpc.Compare:
    """Compare: the key's version equals `version` (0 = absent)."""
    return _cmp(key, rpc.Compare.VERSION, version=version)
