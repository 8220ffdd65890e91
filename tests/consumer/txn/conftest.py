"""Transaction fixtures: the runtime's broker, Journal stub and replica rig."""

from tests.broker.conftest import broker, stub  # noqa: F401  (fixtures)
from tests.consumer.runtime.conftest import rig  # noqa: F401  (fixtures)
