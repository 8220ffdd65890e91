"""How the servicer reports failures: retriable ones so that clients retry."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from gazette_core.broker import servicer
from gazette_core.broker.append_stream import AppendStreamError
from gazette_core.broker.pipeline import PipelineError
from gazette_core.broker.proxy import ProxyError


class Aborted(Exception):
    pass


class RecordingContext:
    def __init__(self) -> None:
        self.code: grpc.StatusCode | None = None
        self.details = ""

    async def abort(self, code: grpc.StatusCode, details: str) -> Any:
        self.code, self.details = code, details
        raise Aborted


@pytest.mark.parametrize(("error", "code"), [
    (ProxyError("peer went away"), grpc.StatusCode.UNAVAILABLE),
    (PipelineError("replica failed"), grpc.StatusCode.UNAVAILABLE),
    (AppendStreamError("unexpected EOF"), grpc.StatusCode.UNKNOWN),
])
async def test_abort_code_follows_whether_the_error_is_retriable(
        error: Exception, code: grpc.StatusCode) -> None:
    context = RecordingContext()
    with pytest.raises(Aborted):
        await servicer._abort(context, error)  # type: ignore[arg-type]
    assert (context.code, context.details) == (code, str(error))
