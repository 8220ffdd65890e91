"""Build valid recovery-log content by hand: framed ops of one author, chained checksums."""

from __future__ import annotations

from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.consumer.recoverylog.checksum import chain
from gazette_core.consumer.recoverylog.framing import encode


class OpLog:
    """Frames of a properly sequenced op stream, as a recorder of `author` would write.

    Each method returns the bytes to append (a write's payload follows its frame).
    `seq_no` and `checksum` continue a log already played to that point.
    """

    def __init__(self, author: int, seq_no: int = 1, checksum: int = 0) -> None:
        self.author = author
        self.seq_no = seq_no
        self.checksum = checksum

    def op(self, **fields: object) -> bytes:
        op = rpb.RecordedOp(seq_no=self.seq_no, checksum=self.checksum, author=self.author,
                            **fields)  # type: ignore[arg-type]
        frame, body = encode(op)
        self.seq_no += 1
        self.checksum = chain(self.checksum, body)
        return frame

    def create(self, path: str) -> tuple[int, bytes]:
        """(the new Fnode, its frame)."""
        fnode = self.seq_no
        return fnode, self.op(create=rpb.RecordedOp.Create(path=path))

    def write(self, fnode: int, offset: int, data: bytes) -> bytes:
        frame = self.op(write=rpb.RecordedOp.Write(fnode=fnode, offset=offset,
                                                   length=len(data)))
        return frame + data

    def link(self, fnode: int, path: str) -> bytes:
        return self.op(link=rpb.RecordedOp.Link(fnode=fnode, path=path))

    def unlink(self, fnode: int, path: str) -> bytes:
        return self.op(unlink=rpb.RecordedOp.Link(fnode=fnode, path=path))

    def property(self, path: str, content: str) -> bytes:
        return self.op(property=rpb.Property(path=path, content=content))

    def noop(self) -> bytes:
        return self.op()
