"""The spool: a journal's fragment under construction, driven by ReplicateRequests.

Primary and replicas apply the very same requests (docs/design/fragments.md#spools), so the
transitions here are the replication protocol: content extends an
uncommitted `delta`; a proposal rolls, rolls back, commits or mismatches.

Rolls and identity: the `Spool` object a caller holds stays the journal's
live spool. On a roll its committed state moves into a *new* `Spool` object
(returned by `apply` when it holds content, for the persister), and the live
object continues with a fresh `SpoolFile`. Index entries keep a reference to
the `SpoolFile`, so reads of a rolled fragment keep working.
"""

from __future__ import annotations

import hashlib
import time
import traceback

from gazette_core.broker import metrics
from gazette_core.broker.fragment.spool_file import SpoolFile, SpoolFullError
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.fragment_ext import sha1_to_sum
from gazette_core.errors import GazetteError


class SpoolError(GazetteError):
    """A ReplicateRequest violated the protocol (e.g. a wrong content_delta)."""


def fragments_equal(a: pb.Fragment, b: pb.Fragment) -> bool:
    """Equality over all eight Fragment fields; an unset sum equals an all-zero one."""
    return (
        a.begin == b.begin
        and a.end == b.end
        and a.sum.part1 == b.sum.part1
        and a.sum.part2 == b.sum.part2
        and a.sum.part3 == b.sum.part3
        and a.journal == b.journal
        and a.compression_codec == b.compression_codec
        and a.backing_store == b.backing_store
        and a.mod_time == b.mod_time
        and a.path_postfix == b.path_postfix
    )


class _ClosedSpoolFile(SpoolFile):
    """Stands in for the file of a closed spool, failing every use."""

    __slots__ = ()

    def __init__(self) -> None:  # Deliberately no temporary file.
        self.begin = 0

    def write(self, position: int, data: bytes) -> None:
        raise SpoolError("spool is closed")

    def read_at(self, offset: int, size: int) -> bytes:
        raise SpoolError("spool is closed")

    def reset(self, begin: int) -> None:
        raise SpoolError("spool is closed")


def _copy_labels(labels: pb.LabelSet) -> pb.LabelSet:
    out = pb.LabelSet()
    out.CopyFrom(labels)
    return out


class Spool:
    """Committed fragment + uncommitted delta of one journal, in an unlinked temp file."""

    fragment: pb.Fragment
    registers: pb.LabelSet
    first_append_time: float | None
    delta: int
    # Its file system ran out of room (here or at a peer): the primary rolls it
    # before more content, so that its content persists and its file frees its space.
    full: bool

    def __init__(self, journal: str, directory: str | None = None) -> None:
        self.journal = journal
        self._directory = directory
        self._file: SpoolFile = SpoolFile(0, directory)
        self._start(0, pb.NONE)
        self.registers = pb.LabelSet()

    def _start(self, offset: int, codec: int) -> None:
        """Become an empty fragment at `offset`; registers are left to the caller."""
        self.fragment = self.roll_proposal(offset, codec)
        self.first_append_time = None
        self.delta = 0
        self.full = False
        self._length = 0
        self._sha = hashlib.sha1()
        # The digest state at the committed end, restored on rollback.
        self._committed_sha = self._sha.copy()

    @property
    def file(self) -> SpoolFile:
        """The file holding this spool's content (what index entries keep for reads)."""
        return self._file

    def content_length(self) -> int:
        """Committed content length, `end - begin`."""
        return self._length

    def apply(self, req: pb.ReplicateRequest) -> tuple[pb.ReplicateResponse, Spool | None]:
        """Apply a content or proposal request; returns the response and any completed spool."""
        if req.HasField("proposal"):
            return self._apply_proposal(req.proposal, req.registers)
        self._apply_content(req.content, req.content_delta)
        return pb.ReplicateResponse(), None

    def _apply_content(self, content: bytes, content_delta: int) -> None:
        if content_delta != self.delta:
            raise SpoolError(
                f"invalid content_delta {content_delta} (expected {self.delta}) "
                f"for journal {self.journal!r}"
            )
        try:
            self._file.write(self._length + self.delta, content)
        except SpoolFullError as exc:
            self.full = True
            # Its frames hold the file, which must close once its content persists.
            traceback.clear_frames(exc.__traceback__)
            raise
        self._sha.update(content)
        self.delta += len(content)

    def _apply_proposal(
        self, proposal: pb.Fragment, registers: pb.LabelSet
    ) -> tuple[pb.ReplicateResponse, Spool | None]:
        completed = None
        end = self.fragment.end
        if proposal.end > end + self.delta or (
            proposal.end == end and proposal.begin == proposal.end
        ):
            completed = self._roll(proposal, registers)

        if fragments_equal(proposal, self.fragment) and registers == self.registers:
            if self.delta:
                metrics.SPOOL_ROLLBACKS.value += 1
                metrics.SPOOL_ROLLBACK_BYTES.value += self.delta
            self._rollback()
            return pb.ReplicateResponse(), completed
        if self.delta > 0 and fragments_equal(proposal, self.proposal_with_delta()):
            self._commit(proposal, registers)
            return pb.ReplicateResponse(), completed
        mismatch = pb.ReplicateResponse(
            status=pb.PROPOSAL_MISMATCH, fragment=self.fragment, registers=self.registers
        )
        return mismatch, completed

    def _roll(self, proposal: pb.Fragment, registers: pb.LabelSet) -> Spool | None:
        """Complete the current fragment and start an empty one at `proposal.end`."""
        completed = None
        if self._length > 0:
            # The new file first: should there be no room even for that, nothing changed.
            file = SpoolFile(proposal.end, self._directory)
            completed = self._detach()
            metrics.SPOOL_COMPLETED.value += 1
            self._file = file
        else:
            # Nothing committed, so nothing else can hold the file: reuse it.
            self._file.reset(proposal.end)
        old_end = self.fragment.end
        self._start(proposal.end, proposal.compression_codec)
        if proposal.end > old_end:
            self.registers = _copy_labels(registers)
        return completed

    def _detach(self) -> Spool:
        """A new Spool object owning the committed state (and file) of this one."""
        done = Spool.__new__(Spool)
        done.journal = self.journal
        done._directory = self._directory
        done._file = self._file
        done.fragment = self.fragment
        done.registers = _copy_labels(self.registers)
        done.first_append_time = self.first_append_time
        done.delta = 0
        done.full = False
        done._length = self._length
        done._sha = self._committed_sha.copy()
        done._committed_sha = self._committed_sha
        return done

    def _rollback(self) -> None:
        if self.delta:
            self.delta = 0
            self._sha = self._committed_sha.copy()

    def _commit(self, proposal: pb.Fragment, registers: pb.LabelSet) -> None:
        metrics.SPOOL_COMMITS.value += 1
        metrics.SPOOL_COMMIT_BYTES.value += self.delta
        committed = pb.Fragment()
        committed.CopyFrom(proposal)
        # Fresh objects rather than in-place edits: callers may hold the old ones.
        self.fragment = committed
        self.registers = _copy_labels(registers)
        self._length = committed.end - committed.begin
        self._committed_sha = self._sha.copy()
        self.delta = 0
        if self.first_append_time is None:
            self.first_append_time = time.time()

    def read_at(self, offset: int, size: int) -> bytes:
        """Up to `size` committed bytes from journal `offset`."""
        end = self.fragment.end
        if offset < self.fragment.begin or offset > end:
            raise ValueError(
                f"offset {offset} is outside the spool fragment "
                f"[{self.fragment.begin}, {end}) of {self.journal!r}"
            )
        return self._file.read_at(offset, min(size, end - offset))

    def proposal_with_delta(self) -> pb.Fragment:
        """The fragment extended by the uncommitted delta, with the sum over all its content."""
        proposal = pb.Fragment()
        proposal.CopyFrom(self.fragment)
        proposal.end += self.delta
        if proposal.end == proposal.begin:
            proposal.sum.CopyFrom(pb.SHA1Sum())
        else:
            proposal.sum.CopyFrom(sha1_to_sum(self._sha.digest()))
        return proposal

    def roll_proposal(self, offset: int, codec: int) -> pb.Fragment:
        """An empty fragment of this journal at `offset` with `codec`."""
        return pb.Fragment(
            journal=self.journal,
            begin=offset,
            end=offset,
            sum=pb.SHA1Sum(),
            compression_codec=pb.CompressionCodec.ValueType(codec),
        )

    def close(self) -> None:
        """Drop this spool's hold on its file; it closes once no index entry or reader holds it."""
        self._rollback()
        self._file = _ClosedSpoolFile()
