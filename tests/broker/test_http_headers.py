"""Units of the HTTP gateway: Go's compact text, Location joins, query decoding, Authorization."""

from __future__ import annotations

from typing import Any, cast

import pytest
from aiohttp.test_utils import make_mocked_request

from gazette_core.broker.http_gateway import HttpGateway
from gazette_core.broker.http_headers import _join_url, route_compact_text, route_headers
from gazette_core.broker.http_requests import QueryError, parse_query, read_request
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import ValidationError
from gazette_core.server.client_auth import AuthorizedStub


def test_route_compact_text_matches_gogo() -> None:
    route = pb.Route(members=[pb.ProcessSpec.ID(zone="a", suffix="broker")],
                     endpoints=["http://broker/path"])
    assert route_compact_text(route) == (
        'members:<zone:"a" suffix:"broker" > endpoints:"http://broker/path" ')
    route.primary = -1
    route.members.add(suffix='q"\\\n\x01é')
    assert route_compact_text(route) == (
        'members:<zone:"a" suffix:"broker" > members:<suffix:"q\\"\\\\\\n\\001\\303\\251" > '
        'primary:-1 endpoints:"http://broker/path" ')


def test_route_headers() -> None:
    header = pb.Header(route=pb.Route(members=[pb.ProcessSpec.ID(zone="z", suffix="b")],
                                      primary=0, endpoints=["http://h:8080"]))
    assert route_headers(header, "/a/journal") == [
        ("X-Route-Token", 'members:<zone:"z" suffix:"b" > endpoints:"http://h:8080"'),
        ("Location", "http://h:8080/a/journal")]
    header.route.primary = -1
    assert [name for name, _ in route_headers(header, "/a/journal")] == ["X-Route-Token"]
    assert route_headers(pb.Header(), "/a/journal") == []


@pytest.mark.parametrize(("endpoint", "path", "expect"), [
    ("http://h:1", "/a/b", "http://h:1/a/b"),
    ("http://h:1/base/", "/a/b", "http://h:1/base/a/b"),
    ("unix:///tmp/sock", "/a/b", "unix:///tmp/sock/a/b"),
    ("http://h:1", "/a/100%/é", "http://h:1/a/100%25/%C3%A9"),
])
def test_location_joins_like_go(endpoint: str, path: str, expect: str) -> None:
    assert _join_url(endpoint, path) == expect


def test_query_decoding() -> None:
    schema = {"offset": int, "block": lambda v: v == "true" or None}
    assert parse_query("OFFSET=1&offset=2&Block=true", schema) == {"offset": 2, "block": True}
    assert parse_query("offset=2&offset=", schema) == {}  # the last value, empty: the default
    with pytest.raises(QueryError, match="invalid semicolon separator in query"):
        parse_query("offset=1;block=true", schema)
    with pytest.raises(QueryError, match='invalid URL escape "%zz"'):
        parse_query("offset=%zz", schema)
    with pytest.raises(QueryError, match=r'invalid path "x" \(and 2 other errors\)'):
        parse_query("x=1&y=2&z=3", schema)


def test_read_request() -> None:
    req = read_request("/a/journal", "offset=-1&block=t", head=True)
    assert req == pb.ReadRequest(journal="a/journal", offset=-1, block=True, metadata_only=True)
    with pytest.raises(QueryError, match='converting value for "offset"'):
        read_request("/a/journal", "offset=9223372036854775808", head=False)
    with pytest.raises(ValidationError):
        read_request("//", "", head=False)


class _Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def Read(self, request: pb.ReadRequest, **kwargs: Any) -> None:  # gRPC's name
        self.calls.append(("Read", kwargs))

    def Append(self, **kwargs: Any) -> None:  # gRPC's name
        self.calls.append(("Append", kwargs))


async def test_authorization_rides_along_as_grpc_metadata() -> None:
    """Within the event loop, as the gateway makes its stubs."""
    recorder = _Recorder()
    stub = AuthorizedStub(cast(Any, recorder), "Bearer abc")
    stub.Read(pb.ReadRequest(), timeout=5)
    stub.Append(timeout=5)
    assert recorder.calls == [
        ("Read", {"metadata": (("authorization", "Bearer abc"),), "timeout": 5}),
        ("Append", {"metadata": (("authorization", "Bearer abc"),), "timeout": 5})]
    gateway = HttpGateway("http://127.0.0.1:1")
    with_auth = make_mocked_request("GET", "/a/journal", headers={"Authorization": "Bearer x"})
    assert isinstance(gateway._stub(with_auth), AuthorizedStub)
    assert not isinstance(gateway._stub(make_mocked_request("GET", "/a/j")), AuthorizedStub)
