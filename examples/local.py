"""Default endpoints of the examples' commands: the environment, else the local stack
most recently started by `gazctl local up`."""

from __future__ import annotations

import os

from gazette_core.broker.client.channel import split_addresses
from gazette_core.local import stack as local_stack

FALLBACK_BROKER = "http://localhost:8080"
FALLBACK_CONSUMER = "http://localhost:9000"


def default_broker() -> str:
    """$BROKER_ADDRESS (`gazctl local env` lists every broker, and the client library
    uses a live one), else the active local stack's first live broker."""
    listed = split_addresses(os.environ.get("BROKER_ADDRESS", ""))
    return ",".join(listed) or local_stack.active_broker_address() or FALLBACK_BROKER


def default_consumer() -> str:
    return (os.environ.get("CONSUMER_ADDRESS") or local_stack.active_consumer_address()
            or FALLBACK_CONSUMER)
