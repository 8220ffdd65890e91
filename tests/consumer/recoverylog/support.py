"""Builders of recorded-op sequences for FSM tests: stamped, framed and offset like a log."""

from __future__ import annotations

from dataclasses import dataclass, field

from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.consumer.recoverylog.checksum import chain
from gazette_core.consumer.recoverylog.framing import encode

LOG = "recovery/logs/shard-000"


@dataclass
class Writer:
    """A recorder stand-in: stamps ops in sequence and tracks the chain and log offsets."""

    author: int
    log: str = LOG
    seq_no: int = 1
    checksum: int = 0
    offset: int = 0
    ops: list[tuple[rpb.RecordedOp, bytes]] = field(default_factory=list)

    def op(self, payload: int = 0, **kind: object) -> tuple[rpb.RecordedOp, bytes]:
        """Stamp the next op, frame it, and give it a player's exact meta fields."""
        op = rpb.RecordedOp(seq_no=self.seq_no, checksum=self.checksum, author=self.author)
        for name, value in kind.items():
            getattr(op, name).CopyFrom(value)
        frame, body = encode(op)
        op.first_offset = self.offset
        self.offset += len(frame) + payload
        op.last_offset = self.offset
        op.log = self.log
        self.seq_no += 1
        self.checksum = chain(self.checksum, body)
        self.ops.append((op, body))
        return op, body

    def create(self, path: str) -> tuple[rpb.RecordedOp, bytes]:
        return self.op(create=rpb.RecordedOp.Create(path=path))

    def link(self, fnode: int, path: str) -> tuple[rpb.RecordedOp, bytes]:
        return self.op(link=rpb.RecordedOp.Link(fnode=fnode, path=path))

    def unlink(self, fnode: int, path: str) -> tuple[rpb.RecordedOp, bytes]:
        return self.op(unlink=rpb.RecordedOp.Link(fnode=fnode, path=path))

    def write(self, fnode: int, offset: int, length: int) -> tuple[rpb.RecordedOp, bytes]:
        w = rpb.RecordedOp.Write(fnode=fnode, offset=offset, length=length)
        return self.op(payload=length, write=w)

    def prop(self, path: str, content: str) -> tuple[rpb.RecordedOp, bytes]:
        return self.op(property=rpb.Property(path=path, content=content))

    def noop(self) -> tuple[rpb.RecordedOp, bytes]:
        return self.op()
