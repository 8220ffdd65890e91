"""The few etcd calls the local stack makes, over etcd's JSON gateway.

The supervisor runs outside any event loop and needs only a health check and
a lease revocation, so plain HTTP is simpler than a gRPC client here.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from typing import Any


def healthy(endpoint: str) -> bool:
    """Whether etcd at `endpoint` reports itself healthy."""
    try:
        with urllib.request.urlopen(f"{endpoint}/health", timeout=1) as resp:
            return b"true" in resp.read()
    except OSError:
        return False


def _post(endpoint: str, path: str, body: dict[str, str]) -> dict[str, Any]:
    req = urllib.request.Request(f"{endpoint}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as resp:
        data: dict[str, Any] = json.loads(resp.read())
    return data


def revoke_lease_of(endpoint: str, key: str) -> bool:
    """Revoke the lease `key` lives under, deleting every key of that lease.

    Returns whether there was such a lease. A key without a lease is left alone.
    """
    encoded = base64.b64encode(key.encode()).decode()
    kvs = _post(endpoint, "/v3/kv/range", {"key": encoded}).get("kvs", [])
    lease = str(kvs[0].get("lease", "0")) if kvs else "0"
    if lease == "0":
        return False
    try:
        _post(endpoint, "/v3/lease/revoke", {"ID": lease})
    except urllib.error.HTTPError as exc:
        # The lease expired between the read and the revoke: the outcome we wanted.
        if exc.code != 404:
            raise
    return True
