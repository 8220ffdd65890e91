"""A journal spec's flags: whether brokers may read it, and whether they may append to it.

An unset flag (NOT_SPECIFIED) allows both, as O_RDWR does.
"""

from __future__ import annotations

from gazette_core.broker.protocol import protocol_pb2 as pb


def may_read(spec: pb.JournalSpec) -> bool:
    return spec.flags != pb.JournalSpec.O_WRONLY


def may_write(spec: pb.JournalSpec) -> bool:
    return spec.flags in (pb.JournalSpec.NOT_SPECIFIED, pb.JournalSpec.O_WRONLY,
                          pb.JournalSpec.O_RDWR)
