"""gRPC client metrics under go-grpc-prometheus's names, counted by a channel wrapper.

grpc.aio client interceptors slow streaming calls a lot (every message
passes through an extra task), so `MeteredChannel` counts where the calls
are made instead: each multi-callable it hands out counts a call as it
starts and, from the call's done callback, how it ended (Go's name of the
status code; a call cancelled here is Canceled) and how long it took.
Messages are counted by the method's request encoder and response decoder,
which gRPC calls once per message anyway: one function call each.

The series of a method are shared by every channel of the process.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable
from typing import Any

import grpc

from gazette_core.metrics.families import Cell, Counter, Histogram
from gazette_core.metrics.grpc_labels import (
    BIDI_STREAM,
    CLIENT_STREAM,
    GO_CODES,
    GO_CODES_BY_NUMBER,
    HANDLED_LABELS,
    SERVER_STREAM,
    TYPE_LABELS,
    UNARY,
    counting,
    split_method,
)

STARTED = Counter("grpc_client_started_total", "RPCs this client started.", TYPE_LABELS)
HANDLED = Counter("grpc_client_handled_total",
                  "RPCs this client saw end, by status code.", HANDLED_LABELS)
RECEIVED = Counter("grpc_client_msg_received_total",
                   "Response messages this client received.", TYPE_LABELS)
SENT = Counter("grpc_client_msg_sent_total", "Request messages this client sent.", TYPE_LABELS)
SECONDS = Histogram("grpc_client_handling_seconds",
                    "Seconds from the start of an RPC to its end, as this client saw it.",
                    TYPE_LABELS)


class _Method:
    """The series of one method called as one kind, exposed from its first call on (stubs
    make a multi-callable of every method of their service)."""

    __slots__ = ("_handled", "_shown", "labels", "received", "seconds", "sent", "started")

    def __init__(self, full_method: str, kind: str) -> None:
        self.labels = (kind, *split_method(full_method))
        self.started = STARTED.new_cell()
        self.seconds = SECONDS.new_cell()
        self.received = RECEIVED.new_cell()
        self.sent = SENT.new_cell()
        self._handled: dict[str, Cell] = {}
        self._shown = False

    def begin(self, call: Any) -> None:
        if not self._shown:
            self._shown = True
            STARTED.show(self.started, *self.labels)
            SECONDS.show(self.seconds, *self.labels)
            RECEIVED.show(self.received, *self.labels)
            SENT.show(self.sent, *self.labels)
        self.started.value += 1
        call.add_done_callback(functools.partial(self._done, time.perf_counter()))

    def _done(self, started: float, call: Any) -> None:
        self.seconds.observe(time.perf_counter() - started)
        code = _final_code(call)
        if code is None:  # no status to read now: ask for it
            task = asyncio.ensure_future(call.code())
            task.add_done_callback(lambda t: self._count(
                "Unknown" if t.cancelled() or t.exception() else GO_CODES[t.result()]))
            return
        self._count(code)

    def _count(self, code: str) -> None:
        cell = self._handled.get(code)
        if cell is None:
            cell = self._handled[code] = HANDLED.cell(*self.labels, code)
        cell.value += 1


_methods: dict[tuple[str, str], _Method] = {}


def _method(full_method: str, kind: str) -> _Method:
    method = _methods.get((full_method, kind))
    if method is None:
        method = _methods[(full_method, kind)] = _Method(full_method, kind)
    return method


def _final_code(call: Any) -> str | None:
    """Go's name of a finished call's code, read without awaiting (None: cannot tell)."""
    if call.cancelled():
        return "Canceled"
    # grpc.aio keeps the final status on the call; its public accessors are coroutines.
    status = getattr(getattr(call, "_cython_call", None), "_status", None)
    if status is None:
        return None
    return GO_CODES_BY_NUMBER.get(status.code(), "Unknown")


class _Metered:
    """A multi-callable counting each call it starts."""

    __slots__ = ("_inner", "_method")

    def __init__(self, inner: Callable[..., Any], method: _Method) -> None:
        self._inner, self._method = inner, method

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        call = self._inner(*args, **kwargs)
        self._method.begin(call)
        return call


class MeteredChannel(grpc.aio.Channel):
    """`inner`, with every call made through it counted (see the module docstring)."""

    def __init__(self, inner: grpc.aio.Channel) -> None:
        self.inner = inner

    def _metered(self, make: Callable[..., Any], kind: str, method: str,
                 request_serializer: Any, response_deserializer: Any,
                 registered: Any) -> Any:
        meter = _method(method, kind)
        return _Metered(make(method, counting(request_serializer, meter.sent),
                             counting(response_deserializer, meter.received), registered),
                        meter)

    def unary_unary(self, method: str, request_serializer: Any = None,
                    response_deserializer: Any = None, _registered_method: Any = False) -> Any:
        return self._metered(self.inner.unary_unary, UNARY, method, request_serializer,
                             response_deserializer, _registered_method)

    def unary_stream(self, method: str, request_serializer: Any = None,
                     response_deserializer: Any = None, _registered_method: Any = False) -> Any:
        return self._metered(self.inner.unary_stream, SERVER_STREAM, method,
                             request_serializer, response_deserializer, _registered_method)

    def stream_unary(self, method: str, request_serializer: Any = None,
                     response_deserializer: Any = None, _registered_method: Any = False) -> Any:
        return self._metered(self.inner.stream_unary, CLIENT_STREAM, method,
                             request_serializer, response_deserializer, _registered_method)

    def stream_stream(self, method: str, request_serializer: Any = None,
                      response_deserializer: Any = None, _registered_method: Any = False
                      ) -> Any:
        return self._metered(self.inner.stream_stream, BIDI_STREAM, method,
                             request_serializer, response_deserializer, _registered_method)

    def get_state(self, try_to_connect: bool = False) -> grpc.ChannelConnectivity:
        return self.inner.get_state(try_to_connect)

    async def wait_for_state_change(self, last_observed_state: grpc.ChannelConnectivity
                                    ) -> None:
        await self.inner.wait_for_state_change(last_observed_state)

    async def channel_ready(self) -> None:
        await self.inner.channel_ready()

    async def close(self, grace: float | None = None) -> None:
        await self.inner.close(grace)

    async def __aenter__(self) -> MeteredChannel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
