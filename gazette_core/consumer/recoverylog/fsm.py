"""The recovery-log FSM: the file-system state a sequence of recorded ops builds.

Recorders and players both run one. An op applies only if it is the next in
sequence (seq_no and checksum chain), by the hinted author while hinted
segments remain, and consistent with the links and live Fnodes so far.
FnodeNotTrackedError is the one rejection that still advances the FSM: the op
is part of the log but concerns an Fnode the hints say is dead, so the caller
must not act on it locally. Built from hints, the FSM also tracks the hinted
segments still to read and jumps between them.
"""

from __future__ import annotations

from typing import Literal

from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.consumer.recoverylog.checksum import chain
from gazette_core.consumer.recoverylog.hints import HintsError, live_log_segments, validate_hints
from gazette_core.consumer.recoverylog.segments import SegmentSet
from gazette_core.errors import GazetteError


class FSMError(GazetteError):
    """An op was not applied (or, for FnodeNotTrackedError, applied but not tracked)."""


class NotHintedAuthorError(FSMError):
    """The op's author is not the author of the next hinted segment."""


class WrongSeqNoError(FSMError):
    """The op's seq_no is not the next expected one."""

    def __init__(self, expected: int, got: int) -> None:
        self.expected = expected
        self.got = got
        super().__init__(f"wrong seq_no: expected {expected}, got {got}")


class ChecksumMismatchError(FSMError):
    """The op's checksum is not the FSM's chain value."""


class LinkExistsError(FSMError):
    """The path is already linked."""


class PropertyExistsError(FSMError):
    """The path is already a property."""


class FnodeNotTrackedError(FSMError):
    """The op is consistent and the FSM advanced, but its Fnode is not tracked."""


class ExpectedHintedFnodeError(FSMError):
    """A non-create op carries the seq_no of the next hinted Fnode."""


class NoSuchLinkError(FSMError):
    """The Fnode is not linked at the unlinked path."""


class RemainingHintsError(FSMError):
    """Hints were still unread where none may remain."""


__all__ = [
    "FSM", "ChecksumMismatchError", "ExpectedHintedFnodeError", "FSMError",
    "FnodeNotTrackedError", "HintsError", "LinkExistsError", "NoSuchLinkError",
    "NotHintedAuthorError", "PropertyExistsError", "RemainingHintsError", "WrongSeqNoError",
]


class FSM:
    """State of a recovery log as of `next_seq_no` (see module docstring)."""

    def __init__(self, hints: rpb.FSMHints | None = None) -> None:
        self.next_seq_no = 1
        self.next_checksum = 0
        self.last_log = ""
        self.links: dict[str, int] = {}
        self.live_nodes: dict[int, set[str]] = {}
        self.properties: dict[str, str] = {}
        self.node_segments: dict[int, list[rpb.Segment]] = {}
        self._hinted_fnodes: list[int] = []
        self._hinted = SegmentSet()
        if hints is None:
            return
        validate_hints(hints)
        self.last_log = hints.log
        fnodes, segments = live_log_segments(hints)
        self._hinted_fnodes = fnodes[::-1]  # popped from the end
        self._hinted = segments
        if segments:
            self.next_seq_no = segments[0].first_seq_no
            self.next_checksum = segments[0].first_checksum
        for prop in hints.properties:
            self.properties[prop.path] = prop.content

    def has_remaining_hints(self) -> bool:
        """Whether hinted segments remain to be read."""
        return len(self._hinted) != 0

    def next_hinted_segment(self) -> rpb.Segment | None:
        """A copy of the next hinted segment to read (log filled in), or None."""
        if not self._hinted:
            return None
        seg = rpb.Segment()
        seg.CopyFrom(self._hinted[0])
        return seg

    def hinted_segments(self) -> list[rpb.Segment]:
        """Copies of the hinted segments still to read, in order."""
        return self._hinted.segments()

    def apply(self, op: rpb.RecordedOp, body: bytes) -> None:
        """Apply `op` whose frame body is `body`; an FSMError subclass if not applied."""
        if self._hinted and op.author != self._hinted[0].author:
            raise NotHintedAuthorError(
                f"op author {op.author:#x} is not the hinted author {self._hinted[0].author:#x}"
            )
        if op.seq_no != self.next_seq_no:
            raise WrongSeqNoError(self.next_seq_no, op.seq_no)
        if op.checksum != self.next_checksum:
            raise ChecksumMismatchError(
                f"op seq_no {op.seq_no} checksum {op.checksum:#x} does not match the "
                f"chain value {self.next_checksum:#x}"
            )
        untracked: FnodeNotTrackedError | None = None
        try:
            self._apply_kind(op)
        except FnodeNotTrackedError as exc:
            untracked = exc
        self._advance(op, body)
        if untracked is not None:
            raise untracked

    def _apply_kind(self, op: rpb.RecordedOp) -> None:
        kind = _kind(op)
        if kind == "create":
            self._apply_create(op)
            return
        if self._hinted_fnodes and op.seq_no == self._hinted_fnodes[-1]:
            raise ExpectedHintedFnodeError(
                f"op seq_no {op.seq_no} is the hinted Fnode {op.seq_no}, but not a create"
            )
        if kind == "link":
            self._apply_link(op)
        elif kind == "unlink":
            self._apply_unlink(op)
        elif kind == "write":
            self._tracked(op.write.fnode)
            self._extend(op.write.fnode, op)
        elif kind == "property":
            if op.property.path in self.links:
                raise LinkExistsError(f"property path {op.property.path!r} is a link")
            self.properties[op.property.path] = op.property.content

    def _apply_create(self, op: rpb.RecordedOp) -> None:
        path = op.create.path
        if path in self.links:
            raise LinkExistsError(f"create of {path!r}: path is already linked")
        if path in self.properties:
            raise PropertyExistsError(f"create of {path!r}: path is a property")
        # While hints remain, a create that is not the next hinted Fnode made a
        # node that was dead when the hints were built, even after the last
        # hinted Fnode: its unlink may sit in a gap between hinted segments.
        if self._hinted_fnodes and self._hinted_fnodes[-1] == op.seq_no:
            self._hinted_fnodes.pop()
        elif self._hinted_fnodes or self._hinted:
            raise FnodeNotTrackedError(f"create at seq_no {op.seq_no} is not a hinted Fnode")
        fnode = op.seq_no
        self.live_nodes[fnode] = {path}
        self.links[path] = fnode
        self.node_segments[fnode] = []
        self._extend(fnode, op)

    def _apply_link(self, op: rpb.RecordedOp) -> None:
        path, fnode = op.link.path, op.link.fnode
        if path in self.links:
            raise LinkExistsError(f"link of Fnode {fnode} at {path!r}: path is already linked")
        if path in self.properties:
            raise PropertyExistsError(f"link of Fnode {fnode} at {path!r}: path is a property")
        self._tracked(fnode)
        self.live_nodes[fnode].add(path)
        self.links[path] = fnode
        self._extend(fnode, op)

    def _apply_unlink(self, op: rpb.RecordedOp) -> None:
        path, fnode = op.unlink.path, op.unlink.fnode
        self._tracked(fnode)
        paths = self.live_nodes[fnode]
        if path not in paths:
            raise NoSuchLinkError(f"unlink of Fnode {fnode} at {path!r}: no such link")
        paths.discard(path)
        del self.links[path]
        self._extend(fnode, op)
        if not paths:
            del self.live_nodes[fnode]
            del self.node_segments[fnode]

    def _tracked(self, fnode: int) -> None:
        if fnode not in self.live_nodes:
            raise FnodeNotTrackedError(f"Fnode {fnode} is not live")

    def _extend(self, fnode: int, op: rpb.RecordedOp) -> None:
        """Extend the Fnode's last segment with `op`, or start a new one."""
        segs = self.node_segments[fnode]
        if segs and segs[-1].author == op.author and segs[-1].log == op.log:
            segs[-1].last_seq_no = op.seq_no
            segs[-1].last_offset = op.last_offset
            return
        segs.append(rpb.Segment(
            author=op.author, first_seq_no=op.seq_no, first_offset=op.first_offset,
            first_checksum=op.checksum, last_seq_no=op.seq_no, last_offset=op.last_offset,
            log=op.log,
        ))

    def _advance(self, op: rpb.RecordedOp, body: bytes) -> None:
        self.next_seq_no += 1
        self.next_checksum = chain(self.next_checksum, body)
        self.last_log = op.log
        if self._hinted and self._hinted[0].last_seq_no < self.next_seq_no:
            self._hinted.pop_front()
            if self._hinted:
                self.next_seq_no = self._hinted[0].first_seq_no
                self.next_checksum = self._hinted[0].first_checksum

    def build_hints(self, log: str) -> rpb.FSMHints:
        """Hints to rebuild this state from `log`; RemainingHintsError if hints remain."""
        if self.has_remaining_hints():
            raise RemainingHintsError("cannot build hints: FSM has remaining unread hints")
        hints = rpb.FSMHints(log=log)
        for fnode in sorted(self.live_nodes):
            node = hints.live_nodes.add(fnode=fnode)
            for seg in self.node_segments[fnode]:
                out = node.segments.add()
                out.CopyFrom(seg)
                if out.log == log:
                    out.log = ""
        for path in sorted(self.properties):
            hints.properties.add(path=path, content=self.properties[path])
        return hints


_KINDS: tuple[Literal["create", "link", "unlink", "write", "property"], ...] = (
    "create", "link", "unlink", "write", "property",
)


def _kind(op: rpb.RecordedOp) -> str:
    """Which of create/link/unlink/write/property the op carries ("" for a no-op)."""
    for kind in _KINDS:
        if op.HasField(kind):
            return kind
    return ""
