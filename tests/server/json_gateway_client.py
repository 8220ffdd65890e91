"""A client of the /v1/ JSON gateway for tests, written from the gateway's description.

Requests are real protobuf messages turned into JSON by google.protobuf's
json_format; answers are parsed back into messages the same way. A
server-streaming RPC answers newline-terminated `{"result": ...}` objects,
possibly ended by one `{"error": ...}` object; a unary RPC the message
itself; an error before any answer, `{"code", "message", "details"}`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import aiohttp
from google.protobuf import json_format
from google.protobuf.message import Message

M = TypeVar("M", bound=Message)


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def as_json(request: Message) -> str:
    """A request message as JSON, lowerCamelCase names."""
    return json_format.MessageToJson(request)


def parse(value: Any, message_type: type[M]) -> M:
    """A message from the gateway's JSON of it; unknown fields are an error."""
    return pruned(json_format.ParseDict(value, message_type()))


def pruned(message: M) -> M:
    """`message` without its empty sub-messages: the gateway writes some that gRPC leaves
    unset (Go's structs hold them by value), and proto3 reads both the same."""
    for field, value in message.ListFields():
        if field.message_type is None or field.message_type.GetOptions().map_entry:
            continue
        values = value if field.is_repeated else [value]
        for item in values:
            pruned(item)
        if not field.is_repeated and value.ByteSize() == 0:
            message.ClearField(field.name)
    return message


def settled(responses: list[M]) -> list[M]:
    """`responses`, pruned, without the Etcd revision of their headers, which leases and
    assignments move on between two calls that are otherwise answered alike."""
    for response in responses:
        if pruned(response).HasField("header"):
            response.header.etcd.revision = 0
    return responses


class Lines:
    """The lines of a streamed answer, read one at a time as they arrive."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response

    async def next(self) -> Any:
        """The next object of the stream, or None at its end."""
        line = await self.response.content.readline()
        return json.loads(line) if line else None

    async def result(self, message_type: type[M]) -> M:
        obj = await self.next()
        assert obj is not None and list(obj) == ["result"], obj
        return parse(obj["result"], message_type)


class GatewayClient:
    def __init__(self, session: aiohttp.ClientSession, base_url: str,
                 authorization: str | None = None) -> None:
        self.session, self.base_url = session, base_url.rstrip("/")
        self.headers = {"Authorization": authorization} if authorization else {}

    async def post(self, path: str, body: bytes | str,
                   headers: dict[str, str] | None = None, method: str = "POST") -> Answer:
        """Any request: its status, headers and whole body."""
        async with self.session.request(method, self.base_url + path, data=body,
                                        headers={**self.headers, **(headers or {})}) as resp:
            return Answer(resp.status, dict(resp.headers), await resp.read())

    async def unary(self, path: str, request: Message, response_type: type[M]) -> M:
        answer = await self.post(path, as_json(request))
        assert answer.status == 200, (answer.status, answer.body)
        assert answer.headers["Content-Type"] == "application/json"
        return parse(answer.json(), response_type)

    @asynccontextmanager
    async def stream(self, path: str, request: Message) -> AsyncIterator[Lines]:
        """A server-streaming call whose answer began with 200."""
        async with self.session.post(self.base_url + path, data=as_json(request),
                                     headers=self.headers) as resp:
            assert resp.status == 200, (resp.status, await resp.read())
            yield Lines(resp)

    async def results(self, path: str, request: Message, response_type: type[M]) -> list[M]:
        """Every response of a server-streaming call that ends by itself."""
        answer = await self.post(path, as_json(request))
        assert answer.status == 200, (answer.status, answer.body)
        lines = answer.body.split(b"\n")
        assert lines[-1] == b"", "each result ends with a newline"
        out = []
        for line in lines[:-1]:
            obj = json.loads(line)
            assert list(obj) == ["result"], obj
            out.append(parse(obj["result"], response_type))
        return out
