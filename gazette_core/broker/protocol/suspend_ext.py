"""A journal spec's suspension level (an unset `suspend` means NONE)."""

from __future__ import annotations

from gazette_core.broker.protocol import protocol_pb2 as pb

Level = pb.JournalSpec.Suspend


def suspend_level(spec: pb.JournalSpec) -> int:
    return spec.suspend.level if spec.HasField("suspend") else Level.NONE


def fully_suspended(spec: pb.JournalSpec) -> bool:
    """FULL: no assignments and no content to read (docs/design/append.md#suspension)."""
    return suspend_level(spec) == Level.FULL
