"""Message fixtures: the broker tests' in-process broker and its stub."""

from tests.broker.conftest import broker, stub  # noqa: F401  (fixtures)
