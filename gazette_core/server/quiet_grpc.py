"""Loads gRPC with its own log lines off, unless $GRPC_VERBOSITY asks for them.

gRPC's core writes its own lines to stderr (a failed TLS handshake, say),
outside the process's log format: a process failing to start would print
them before its one line, which carries gRPC's reason already, and with
`--log.format json` stderr would no longer be JSON alone. Server entry points
import this module before anything loads gRPC. The variable is taken out
again, so that processes started from here log as usual.
"""

from __future__ import annotations

import os

import gazette_core  # noqa: F401  (before gRPC loads: it turns gRPC's fork support off)

if "GRPC_VERBOSITY" not in os.environ:
    os.environ["GRPC_VERBOSITY"] = "NONE"
    try:
        import grpc  # noqa: F401
    finally:
        del os.environ["GRPC_VERBOSITY"]
