"""The claims of the RPC being served, and the journal-level checks made with them.

The server interceptor verifies the token and records its claims for the
RPC's task; RPC code then asks whether a journal is within them. Without a
recorded claim (no keys configured, or work outside any RPC) everything is
visible, which is the no-auth behaviour.
"""

from __future__ import annotations

from contextvars import ContextVar

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.server.auth import AuthError, Claims

_current: ContextVar[Claims | None] = ContextVar("gazette_claims", default=None)


def serve_with(claims: Claims) -> None:
    """Record `claims` for the RPC running in the current task."""
    _current.set(claims)


def current_claims() -> Claims | None:
    return _current.get()


def visible(name: str, labels: pb.LabelSet | None = None) -> bool:
    """Whether the current RPC's claims reach the journal `name` with `labels`."""
    claims = _current.get()
    return claims is None or claims.allows(name, labels)


def authorize_apply(req: pb.ApplyRequest) -> None:
    """AuthError unless every change is within the claims.

    An upsert is checked against the new spec's labels and name, a delete
    against the name only (docs/design/protocol.md#authorization).
    """
    for change in req.changes:
        if change.HasField("upsert"):
            name, ok = change.upsert.name, visible(change.upsert.name, change.upsert.labels)
        else:
            name, ok = change.delete, visible(change.delete)
        if not ok:
            raise AuthError(f"not authorized to apply journal {name!r}: "
                            "it is outside the authorization's selector")
