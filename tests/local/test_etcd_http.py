"""The local stack's etcd calls over the JSON gateway, against a real etcd."""

from __future__ import annotations

import base64
import json
import urllib.request
from typing import Any

from gazette_core.local import etcd_http
from gazette_core.testing.etcd import EtcdServer, free_port


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _post(endpoint: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(f"{endpoint}{path}", data=json.dumps(body).encode())
    with urllib.request.urlopen(req, timeout=5) as resp:
        data: dict[str, Any] = json.loads(resp.read())
    return data


def _count(endpoint: str, key: str) -> int:
    return int(_post(endpoint, "/v3/kv/range", {"key": _b64(key)}).get("count", 0))


def test_healthy_is_false_for_a_closed_port() -> None:
    assert not etcd_http.healthy(f"http://127.0.0.1:{free_port()}")


def test_healthy_reports_a_running_etcd(etcd_server: EtcdServer) -> None:
    assert etcd_http.healthy(etcd_server.endpoint)


def test_revoke_lease_of_deletes_every_key_of_the_lease(etcd_server: EtcdServer) -> None:
    endpoint = etcd_server.endpoint
    lease = _post(endpoint, "/v3/lease/grant", {"TTL": 60})["ID"]
    try:
        for key in ("/test-local/members/local#b1", "/test-local/assign/b1"):
            _post(endpoint, "/v3/kv/put",
                  {"key": _b64(key), "value": _b64("v"), "lease": lease})

        assert etcd_http.revoke_lease_of(endpoint, "/test-local/members/local#b1")

        assert _count(endpoint, "/test-local/members/local#b1") == 0
        assert _count(endpoint, "/test-local/assign/b1") == 0
    finally:
        # Other tests expect the shared etcd to be empty.
        _post(endpoint, "/v3/kv/deleterange",
              {"key": _b64("/test-local/"), "range_end": _b64("/test-local0")})


def test_revoke_lease_of_leaves_unleased_and_missing_keys(etcd_server: EtcdServer) -> None:
    endpoint = etcd_server.endpoint
    key = "/test-local/plain"
    _post(endpoint, "/v3/kv/put", {"key": _b64(key), "value": _b64("v")})
    try:
        assert not etcd_http.revoke_lease_of(endpoint, key)
        assert not etcd_http.revoke_lease_of(endpoint, "/test-local/missing")
        assert _count(endpoint, key) == 1
    finally:
        _post(endpoint, "/v3/kv/deleterange", {"key": _b64(key)})
