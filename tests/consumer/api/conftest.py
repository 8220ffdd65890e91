"""Shard API fixtures: the broker tests' in-process broker and its Journal stub."""

from tests.broker.conftest import broker, stub  # noqa: F401  (fixtures)
