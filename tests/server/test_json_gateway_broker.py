"""The broker's /v1/ JSON gateway against a real broker: the same answers as gRPC, as JSON.

Requests are made from real messages by json_format and answers parsed back
(tests/server/json_gateway_client.py), so each round trip must give exactly
the messages a gRPC call gives.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aetcd
import aiohttp
import grpc
import pytest
import pytest_asyncio

from gazette_core.broker.client.channel import close_channels
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.server import auth
from gazette_core.testing.broker import broker_config, journal_spec, journal_stub, running_broker
from gazette_core.testing.etcd import EtcdServer
from tests.broker.auth_support import KEY, KEYS, bearer, upsert, wait_primary
from tests.broker.support import append, create, read_all
from tests.server.json_gateway_client import GatewayClient, parse, settled

JOURNAL = "gateway/journal"
ORIGIN = "https://ui.example"
CORS = {"Access-Control-Allow-Origin": ORIGIN,
        "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
        "Access-Control-Allow-Headers": "Cache-Control, Content-Language, Content-Length, "
                                        "Content-Type, Expires, Last-Modified, Pragma, "
                                        "Authorization"}


@dataclass
class Rig:
    stub: pb_grpc.JournalStub
    client: GatewayClient
    http: aiohttp.ClientSession
    base_url: str


@pytest_asyncio.fixture(loop_scope="session")
async def rig(etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path
              ) -> AsyncIterator[Rig]:
    config = broker_config(etcd_server.endpoint, str(tmp_path), http_port=0,
                           allow_origin=[ORIGIN, "http://other.example"])
    async with running_broker(config) as broker, journal_stub(broker.endpoint) as stub, \
            aiohttp.ClientSession() as http:
        await create(stub, journal_spec(JOURNAL, labels=(("team", "blue"),)),
                     journal_spec("gateway/other", labels=(("team", "red"),)))
        base_url = f"{broker.http_endpoint}/v1"
        yield Rig(stub, GatewayClient(http, base_url), http, base_url)
    await close_channels()


async def read_with(stub: pb_grpc.JournalStub, request: pb.ReadRequest,
                    metadata: tuple[tuple[str, str], ...]) -> list[pb.ReadResponse]:
    return [r async for r in stub.Read(request, metadata=metadata)]


def selector(**labels: str) -> pb.LabelSelector:
    return pb.LabelSelector(include=pb.LabelSet(
        labels=[pb.Label(name=n, value=v) for n, v in sorted(labels.items())]))


async def test_journal_list_gives_the_grpc_listing(rig: Rig) -> None:
    for request in [pb.ListRequest(), pb.ListRequest(selector=selector(team="blue"))]:
        via_grpc = [r async for r in rig.stub.List(request)]
        via_json = await rig.client.results("/journals/list", request, pb.ListResponse)
        assert settled(via_json) == settled(via_grpc)
    names = [j.spec.name for j in via_json[0].journals]
    assert names == [JOURNAL]


async def test_journal_read_gives_the_grpc_responses_and_the_bytes_appended(rig: Rig) -> None:
    data = b'<tag attr="&">\x00\xff\n' + bytes(range(256)) * 40
    await append(rig.stub, JOURNAL, data)
    request = pb.ReadRequest(journal=JOURNAL, offset=0)
    via_grpc = await read_all(rig.stub, request)
    via_json = await rig.client.results("/journals/read", request, pb.ReadResponse)
    assert settled(via_json) == settled(via_grpc)
    assert b"".join(r.content for r in via_json) == data
    assert via_json[-1].status == pb.OFFSET_NOT_YET_AVAILABLE


async def test_snake_case_and_camel_case_names_are_both_read(rig: Rig) -> None:
    await append(rig.stub, JOURNAL, b"metadata only")
    expected = await read_all(rig.stub, pb.ReadRequest(journal=JOURNAL, metadata_only=True))
    for body in [f'{{"journal": "{JOURNAL}", "metadata_only": true}}',
                 f'{{"journal": "{JOURNAL}", "metadataOnly": true}}']:
        answer = await rig.client.post("/journals/read", body)
        assert answer.status == 200
        lines = answer.body.splitlines()
        assert settled([parse(json.loads(line)["result"], pb.ReadResponse)
                        for line in lines]) == settled(expected)


async def test_output_is_go_jsonpb_with_defaults(rig: Rig) -> None:
    """lowerCamelCase names, every field written, 64-bit integers as strings, enums by
    name, durations as strings, sub-messages Go holds by pointer as null."""
    answer = await rig.client.post("/journals/list", json.dumps(
        {"selector": {"include": {"labels": [{"name": "team", "value": "blue"}]}}}))
    assert answer.status == 200
    assert answer.headers["Content-Type"] == "application/json"
    listed = json.loads(answer.body)["result"]
    assert list(listed) == ["status", "header", "journals"]
    journal = listed["journals"][0]
    assert list(journal) == ["spec", "modRevision", "route", "createRevision"]
    assert isinstance(journal["modRevision"], str)
    assert journal["spec"]["fragment"] == {
        "length": "1048576", "compressionCodec": "NONE", "stores": ["file:///"],
        "refreshInterval": "1s", "retention": "0s", "flushInterval": "0s",
        "pathPostfixTemplate": ""}
    assert journal["spec"]["suspend"] is None
    assert journal["spec"]["labels"] == {"labels": [{"name": "team", "value": "blue",
                                                     "prefix": False}]}


async def test_a_blocking_read_streams_content_appended_after_it_began(rig: Rig) -> None:
    await append(rig.stub, JOURNAL, b"before")
    request = pb.ReadRequest(journal=JOURNAL, offset=0, block=True)
    async with asyncio.timeout(30), rig.client.stream("/journals/read", request) as lines:
        first = await lines.result(pb.ReadResponse)
        assert first.status == pb.OK and first.fragment.end == len(b"before")
        assert (await lines.result(pb.ReadResponse)).content == b"before"
        await append(rig.stub, JOURNAL, b"after")
        later = b""
        while later != b"after":
            later += (await lines.result(pb.ReadResponse)).content


async def test_an_unknown_journal_is_a_result_with_its_status(rig: Rig) -> None:
    request = pb.ReadRequest(journal="gateway/missing")
    via_grpc = await read_all(rig.stub, request)
    via_json = await rig.client.results("/journals/read", request, pb.ReadResponse)
    assert settled(via_json) == settled(via_grpc)
    assert [r.status for r in via_json] == [pb.JOURNAL_NOT_FOUND]


@pytest.mark.parametrize("body, message", [
    ("{", "invalid JSON: Expecting property name enclosed in double quotes: "
          "line 1 column 2 (char 1)"),
    ('{"journal": "gateway/journal", "nope": 1}',
     'unknown field "nope" in protocol.ReadRequest'),
    ('{"offset": "ten"}', 'field "offset" of protocol.ReadRequest must be an integer, '
                          'not "ten"'),
    ('{"offset": 18446744073709551616}', 'field "offset" of protocol.ReadRequest must be '
                                         'a 64-bit integer, not 18446744073709551616'),
    ('{"block": "yes"}', 'field "block" of protocol.ReadRequest must be true or false, '
                         'not "yes"'),
    ('[1]', "protocol.ReadRequest must be a JSON object, not [1]"),
])
async def test_bad_json_is_invalid_argument(rig: Rig, body: str, message: str) -> None:
    answer = await rig.client.post("/journals/read", body)
    assert (answer.status, answer.headers["Content-Type"]) == (400, "application/json")
    assert answer.json() == {"code": 3, "message": message, "details": []}


async def test_a_grpc_error_before_any_response_is_a_status_with_its_http_code(
        rig: Rig) -> None:
    """As Go's, the broker refuses a bad offset with UNKNOWN, which answers 500."""
    request = pb.ReadRequest(journal="gateway/journal", offset=-2)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await read_all(rig.stub, request)
    answer = await rig.client.post("/journals/read", json.dumps({"journal": JOURNAL,
                                                                  "offset": "-2"}))
    assert info.value.code() == grpc.StatusCode.UNKNOWN
    assert answer.status == 500
    assert answer.json() == {"code": 2, "message": "offset: expected offset >= -1 (got -2)",
                             "details": []}


async def test_unrouted_paths_and_methods_are_not_implemented(rig: Rig) -> None:
    unimplemented = {"code": 12, "message": "Not Implemented", "details": []}
    for method, path in [("GET", "/journals/read"), ("PUT", "/journals/list"),
                         ("POST", "/shards/list"), ("POST", "/journals/read/extra")]:
        answer = await rig.client.post(path, "{}", method=method)
        assert (answer.status, answer.json()) == (501, unimplemented), (method, path)


async def test_an_empty_body_is_an_empty_request(rig: Rig) -> None:
    via_grpc = [r async for r in rig.stub.List(pb.ListRequest())]
    answer = await rig.client.post("/journals/list", b"")
    assert answer.status == 200
    assert settled([parse(json.loads(line)["result"], pb.ListResponse)
                    for line in answer.body.splitlines()]) == settled(via_grpc)


async def test_a_body_over_the_limit_is_refused_unread(rig: Rig) -> None:
    answer = await rig.client.post("/journals/list", b" " * ((1 << 20) + 1))
    assert answer.status == 413
    assert answer.json() == {"code": 3, "message": "the request body is larger than "
                                                   "1048576 bytes", "details": []}


async def test_cors_headers_answer_allowed_origins_only(rig: Rig) -> None:
    answer = await rig.client.post("/journals/list", "{}", headers={"Origin": ORIGIN})
    assert answer.status == 200
    assert {k: answer.headers.get(k) for k in CORS} == CORS
    refused = await rig.client.post("/journals/read", "{", headers={"Origin": ORIGIN})
    assert refused.status == 400
    assert {k: refused.headers.get(k) for k in CORS} == CORS
    stranger = await rig.client.post("/journals/list", "{}",
                                     headers={"Origin": "https://evil.example"})
    assert stranger.status == 200
    assert not set(CORS) & set(stranger.headers)
    # The content gateway beside it is not the JSON gateway's to open to browsers.
    async with rig.http.get(rig.base_url.removesuffix("/v1") + "/" + JOURNAL,
                            headers={"Origin": ORIGIN}) as content:
        assert content.status == 416  # the content gateway, at the empty journal's head
        assert not set(CORS) & set(content.headers)


async def test_options_is_answered_without_reaching_the_gateway(rig: Rig) -> None:
    # An unrouted path: the gateway would answer 501.
    answer = await rig.client.post("/anything", "", headers={"Origin": ORIGIN},
                                   method="OPTIONS")
    assert (answer.status, answer.body) == (200, b"")
    assert {k: answer.headers.get(k) for k in CORS} == CORS
    plain = await rig.client.post("/journals/list", "", method="OPTIONS")
    assert (plain.status, plain.body) == (200, b"")
    assert not set(CORS) & set(plain.headers)


async def test_authorization_rides_along_as_grpc_metadata(
        etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path) -> None:
    config = broker_config(etcd_server.endpoint, str(tmp_path), http_port=0, auth_keys=KEYS)
    async with running_broker(config) as broker, journal_stub(broker.endpoint) as stub, \
            aiohttp.ClientSession() as http:
        await stub.Apply(upsert(journal_spec(JOURNAL)), metadata=bearer())
        await wait_primary(stub, JOURNAL)
        base_url = f"{broker.http_endpoint}/v1"
        request = pb.ReadRequest(journal=JOURNAL, metadata_only=True)
        for metadata, authorization in [
                ((), None),
                (bearer(auth.LIST), f"Bearer {auth.mint(KEY, auth.LIST, None, auth.HOUR_S)}")]:
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await read_with(stub, request, metadata)
            answer = await GatewayClient(http, base_url, authorization).post(
                "/journals/read", json.dumps({"journal": JOURNAL, "metadataOnly": True}))
            status = {grpc.StatusCode.UNAUTHENTICATED: 401,
                      grpc.StatusCode.PERMISSION_DENIED: 403}[info.value.code()]
            assert answer.status == status
            assert answer.json() == {"code": info.value.code().value[0],
                                     "message": info.value.details(), "details": []}
        token = f"Bearer {auth.mint(KEY, auth.READ, None, auth.HOUR_S)}"
        granted = await GatewayClient(http, base_url, token).results(
            "/journals/read", request, pb.ReadResponse)
        assert [r.status for r in granted] == [pb.OFFSET_NOT_YET_AVAILABLE]
    await close_channels()
