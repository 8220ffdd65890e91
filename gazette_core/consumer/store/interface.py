"""The `Store` interface the consumer framework calls (docs/design/consumer.md#stores)."""

from __future__ import annotations

import abc
from collections.abc import Awaitable

from gazette_core.consumer.protocol.consumer_pb2 import Checkpoint

__all__ = ["Checkpoint", "Store"]


class Store(abc.ABC):
    """State that commits atomically with the checkpoint of the offsets it reflects."""

    @abc.abstractmethod
    async def restore_checkpoint(self) -> Checkpoint:
        """The last committed checkpoint (an empty one before the first commit)."""

    @abc.abstractmethod
    def start_commit(self, checkpoint: Checkpoint, wait_for: Awaitable[None] | None) -> (
        Awaitable[None]
    ):
        """Begin committing the transaction's state with `checkpoint`.

        Nothing of the commit reaches the recovery log before `wait_for` resolves, and a
        failed `wait_for` fails the returned awaitable. It resolves once state and
        checkpoint are durable. Never called while the previous commit is pending.
        """

    @abc.abstractmethod
    async def destroy(self) -> None:
        """Release resources and remove the store's local files."""
