"""The JSON gateway's streams and errors, in front of a scripted Journal server.

A real gRPC server over loopback whose Read answers as each test needs (fail
at once, fail after a response, never end), behind the broker's real HTTP
gateway: what a broker only does in rare failures happens here on demand.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import grpc
import pytest
import pytest_asyncio

from gazette_core.broker.client.channel import close_channels, journal_stub
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.server.http_mux import HttpMux
from gazette_core.server.json_gateway import broker_gateway
from tests.server.json_gateway_client import GatewayClient

# grpc-gateway's HTTP status of each gRPC code.
HTTP = {1: 408, 2: 500, 3: 400, 4: 504, 5: 404, 6: 409, 7: 403, 8: 429, 9: 400, 10: 409,
        11: 400, 12: 501, 13: 500, 14: 503, 15: 500, 16: 401}


class ScriptedJournal(pb_grpc.JournalServicer):
    """Read by journal name: "fail/<code>" fails at once, "late/<code>" after one
    response, "endless" sends one response and waits until its call is cancelled."""

    def __init__(self) -> None:
        self.cancelled = asyncio.Event()

    async def Read(self, request: pb.ReadRequest, context: Any) -> AsyncIterator[pb.ReadResponse]:
        kind, _, code = request.journal.partition("/")
        if kind == "fail":
            await context.abort(_code(code), f"failed at once with {code}")
        yield pb.ReadResponse(offset=5, content=b"abc")
        if kind == "late":
            await context.abort(_code(code), "the fragment <vanished> & more")
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise


def _code(number: str) -> grpc.StatusCode:
    return next(c for c in grpc.StatusCode if c.value[0] == int(number))


class Rig:
    def __init__(self, servicer: ScriptedJournal, client: GatewayClient) -> None:
        self.servicer, self.client = servicer, client


@pytest_asyncio.fixture(loop_scope="session")
async def rig() -> AsyncIterator[Rig]:
    servicer = ScriptedJournal()
    server = grpc.aio.server()
    pb_grpc.add_JournalServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    # The gateway as a server process mounts it, in front of the scripted service.
    gateway = HttpMux(lambda: True)
    gateway.mount("/v1", broker_gateway(lambda: journal_stub(f"http://127.0.0.1:{port}"), ()))
    await gateway.start()
    await gateway.listen("--broker.http-port", "127.0.0.1", 0)
    try:
        async with aiohttp.ClientSession() as http:
            yield Rig(servicer, GatewayClient(http, f"http://127.0.0.1:{gateway.port}/v1"))
    finally:
        await gateway.stop()
        await server.stop(None)
        await close_channels()


def read(journal: str) -> str:
    return json.dumps({"journal": journal})


@pytest.mark.parametrize("code", sorted(HTTP))
async def test_an_error_before_any_response_answers_its_http_status(rig: Rig, code: int
                                                                   ) -> None:
    answer = await rig.client.post("/journals/read", read(f"fail/{code}"))
    assert answer.status == HTTP[code]
    assert answer.headers["Content-Type"] == "application/json"
    assert answer.body == (f'{{"code":{code},"message":"failed at once with {code}",'
                           f'"details":[]}}').encode()


async def test_an_error_after_a_response_ends_the_stream_with_an_error_object(rig: Rig
                                                                             ) -> None:
    answer = await rig.client.post("/journals/read", read("late/15"))
    assert answer.status == 200
    assert answer.body == (
        b'{"result":{"status":"OK","header":null,"offset":"5","writeHead":"0",'
        b'"fragment":null,"fragmentUrl":"","content":"YWJj"}}\n'
        b'{"error":{"grpcCode":15,"httpCode":500,'
        b'"message":"the fragment \\u003cvanished\\u003e \\u0026 more",'
        b'"httpStatus":"Internal Server Error","details":[]}}')
    late_404 = await rig.client.post("/journals/read", read("late/5"))
    assert late_404.status == 200
    error = json.loads(late_404.body.splitlines()[-1])
    assert error == {"error": {"grpcCode": 5, "httpCode": 404, "httpStatus": "Not Found",
                               "message": "the fragment <vanished> & more", "details": []}}


async def test_a_client_that_goes_away_cancels_its_call(rig: Rig) -> None:
    async with asyncio.timeout(30):
        async with rig.client.session.post(rig.client.base_url + "/journals/read",
                                           data=read("endless")) as resp:
            assert resp.status == 200
            first = json.loads(await resp.content.readline())
            assert first["result"]["content"] == "YWJj"
            resp.close()  # drops the connection while the stream is open
        await rig.servicer.cancelled.wait()
