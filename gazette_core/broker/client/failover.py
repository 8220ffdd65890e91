"""A channel over several endpoints: calls go to a live one, and move on when it dies.

`dial()` returns one for an address listing endpoints separated by commas
(`http://b1:8080,http://b2:8080`, as `gazctl local env` exports), so every
stub of the library (journal_stub, shard_stub, a Router's default) takes such
a list. It sends each call to one endpoint, the current one:

- The current endpoint is the first live one of the list (`endpoints.py`),
  picked when a call first needs it, so a dead endpoint listed first costs
  nothing but its refused connection.
- A call failing UNAVAILABLE (or CANCELLED, or DEADLINE_EXCEEDED) makes the
  current endpoint suspect, and the next call picks the first live one of
  the others (in list order after it). Only when none of them is up does it
  go back to the suspect, which may just have answered so itself (a broker
  whose Etcd is down); a call answered there clears the suspicion.
- A call with one request and no response yet is sent again when the
  endpoint it went to is down and another was picked: unary calls (Apply,
  ListFragments, the Shard API) and the opening of server streams (Read,
  List) before their first message. An Apply that reached a broker just
  before it died may so be applied twice; its expect_mod_revision fences that.
- A stream that has delivered messages, or whose requests are streamed
  (Append), is not sent again: its failure goes to the caller, whose retries
  (RetryReader, append_retrying, AppendService, List watches) open the next
  call on the endpoint picked then.

A single endpoint is dialed as a plain channel: none of this is in its way.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import grpc

from gazette_core.broker.client.endpoints import first_live
from gazette_core.broker.client.failover_call import Deadline, StreamCall
from gazette_core.broker.client.rpc_errors import TRANSIENT

# How long picking an endpoint may wait on connections that neither succeed nor fail.
PICK_LIMIT_S = 10.0
R = TypeVar("R")


class FailoverChannel(grpc.aio.Channel):
    """Calls over the live one of `endpoints`; `connect` dials one endpoint."""

    def __init__(self, endpoints: Sequence[str],
                 connect: Callable[[str], grpc.aio.Channel]) -> None:
        self.endpoints = list(endpoints)
        self._connect = connect
        self.current: int | None = None  # index of the endpoint calls go to
        self._suspect = False
        self._lock: asyncio.Lock | None = None

    def channel_of(self, index: int) -> grpc.aio.Channel:
        # dial() shares channels and replaces closed ones, so nothing is kept here.
        return self._connect(self.endpoints[index])

    async def pick(self, limit: float | None = None) -> int:
        """The current endpoint, picked again first if there is none or it is suspect."""
        if self.current is not None and not self._suspect:
            return self.current
        bound = PICK_LIMIT_S if limit is None else min(limit, PICK_LIMIT_S)
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:  # concurrent calls wait for one pick
            if self.current is None or self._suspect:
                self.current, self._suspect = await self._choose(bound)
        return self.current

    async def _choose(self, limit: float) -> tuple[int, bool]:
        """The endpoint to use, and whether it is still suspect (not known to be up).

        A suspect current endpoint is tried last: right after a connection
        broke, its channel may still look connected for a moment.
        """
        count = len(self.endpoints)
        order = (list(range(count)) if self.current is None
                 else [(self.current + step) % count for step in range(1, count)])
        with contextlib.suppress(TimeoutError):
            index = order[await first_live([self.channel_of(i) for i in order], limit)]
            if self.channel_of(index).get_state() is grpc.ChannelConnectivity.READY:
                return index, False
        # None (other) is up: the suspect again, or the first, for its call to say why.
        return (self.current if self.current is not None else 0), True

    def failed(self, index: int, err: grpc.aio.AioRpcError) -> None:
        """Note a call to endpoint `index` that failed with `err`."""
        if index == self.current and err.code() in TRANSIENT:
            self._suspect = True

    def answered(self, index: int) -> None:
        """Note a call to endpoint `index` that got an answer: it is up."""
        if index == self.current:
            self._suspect = False

    async def moved_on(self, index: int, err: grpc.aio.AioRpcError, left: float | None) -> bool:
        """Whether, after `err` (already noted) from endpoint `index`, another is current."""
        if err.code() not in TRANSIENT or (left is not None and left <= 0):
            return False
        return await self.pick(left) != index

    async def resend(self, send: Callable[[grpc.aio.Channel, float | None], Awaitable[R]],
                     timeout: float | None) -> R:
        """`send(channel, timeout)` to the current endpoint, and again to the next one
        while the endpoint it went to is down (as many times as there are endpoints)."""
        left = Deadline(timeout)
        tries = len(self.endpoints)
        while True:
            index = await self.pick(left())
            try:
                answer = await send(self.channel_of(index), left())
            except grpc.aio.AioRpcError as err:
                self.failed(index, err)
                tries -= 1
                if not (tries and await self.moved_on(index, err, left())):
                    raise
            else:
                self.answered(index)
                return answer

    def unary_unary(self, method: str, request_serializer: Any = None,
                    response_deserializer: Any = None, _registered_method: Any = False) -> Any:
        def call(request: Any, *, timeout: float | None = None, **options: Any) -> Any:
            def send(channel: grpc.aio.Channel, left: float | None) -> Awaitable[Any]:
                callable_ = channel.unary_unary(method, request_serializer,
                                                response_deserializer, _registered_method)
                return callable_(request, timeout=left, **options)  # type: ignore[no-any-return]
            return self.resend(send, timeout)
        return call

    def _stream(self, kind: str, method: str, request_serializer: Any,
                response_deserializer: Any, registered: Any) -> Callable[..., StreamCall]:
        def opener(channel: grpc.aio.Channel) -> Any:
            return getattr(channel, kind)(method, request_serializer, response_deserializer,
                                          registered)

        def call(*args: Any, timeout: float | None = None, **options: Any) -> StreamCall:
            return StreamCall(self, opener, args, options, timeout,
                              resend=kind == "unary_stream")
        return call

    def unary_stream(self, method: str, request_serializer: Any = None,
                     response_deserializer: Any = None, _registered_method: Any = False) -> Any:
        return self._stream("unary_stream", method, request_serializer, response_deserializer,
                            _registered_method)

    def stream_unary(self, method: str, request_serializer: Any = None,
                     response_deserializer: Any = None, _registered_method: Any = False) -> Any:
        return self._stream("stream_unary", method, request_serializer, response_deserializer,
                            _registered_method)

    def stream_stream(self, method: str, request_serializer: Any = None,
                      response_deserializer: Any = None, _registered_method: Any = False) -> Any:
        return self._stream("stream_stream", method, request_serializer, response_deserializer,
                            _registered_method)

    def get_state(self, try_to_connect: bool = False) -> grpc.ChannelConnectivity:
        """The current endpoint's state (IDLE before any call picked one)."""
        if self.current is None:
            return grpc.ChannelConnectivity.IDLE
        return self.channel_of(self.current).get_state(try_to_connect)

    async def wait_for_state_change(self, last_observed_state: grpc.ChannelConnectivity
                                    ) -> None:
        await self.channel_of(await self.pick()).wait_for_state_change(last_observed_state)

    async def channel_ready(self) -> None:
        await self.channel_of(await self.pick()).channel_ready()

    async def close(self, grace: float | None = None) -> None:
        for index in range(len(self.endpoints)):
            await self.channel_of(index).close(grace)

    async def __aenter__(self) -> FailoverChannel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

