"""The driver's plan of a read of whole journals: one task per journal, its covering fragments.

`plan_frame` (pure: no I/O) turns a selection (selection.py) into the
`JournalTask`s executors read (decode/content.py), one per journal with
content to read: the fragments covering it, in offset order, none inside
another (`covering`). The journals must share one framing (`shared_kind`).
The batch reader (batch_reader.py) cuts these tasks into ranges, the
streaming source takes the same cover (stream_plan.py), and journals_frame.py
and the export plan reads with it too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gazette_core.broker.client.channel import ClientConfig
from gazette_core.broker.fragment.cover_set import CoverSet, IndexEntry
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import ValidationError
from gazette_core.message.framing import CSV as CSV_TYPE
from gazette_core.message.framing import JSON_LINES, PROTOBUF_FIXED, content_type
from spark_jobs.decode.content import CSV, JSON, RAW, JournalTask, is_persisted
from spark_jobs.selection import GAZCTL, Selection, Words, check_file_root


@dataclass
class FramePlan:
    """What executors read: one task per journal, and what was left out."""

    kind: str = RAW
    tasks: list[JournalTask] = field(default_factory=list)
    suspended: list[str] = field(default_factory=list)
    unpersisted_skipped: int = 0  # fragments left out with unpersisted=False
    bytes_total: int = 0  # content bytes the tasks cover


def journal_kind(spec: pb.JournalSpec, words: Words = GAZCTL) -> str:
    """How a journal's content becomes rows: JSON, CSV or RAW (its bytes)."""
    kind = content_type(spec).split(";", 1)[0].strip().lower()
    if kind == JSON_LINES:
        return JSON
    if kind == CSV_TYPE:
        return CSV
    if kind == PROTOBUF_FIXED:
        raise ValidationError(words.selector, f"journal {spec.name} holds protobuf messages, "
                              "which cannot be read as a table without their type")
    return RAW


def shared_kind(specs: list[pb.JournalSpec], words: Words = GAZCTL) -> str:
    """The one kind of every journal; a selection mixing framings is refused."""
    kinds = {spec.name: journal_kind(spec, words) for spec in specs}
    distinct = sorted(set(kinds.values()))
    if len(distinct) > 1:
        examples = [next(n for n, k in sorted(kinds.items()) if k == kind) for kind in distinct]
        raise ValidationError(words.selector, "the journals do not share one framing: " + ", ".join(
            f"{name} is {kind}" for name, kind in zip(examples, distinct, strict=True))
            + "; select journals of one content-type")
    return distinct[0] if distinct else RAW


def covering(fragments: list[pb.Fragment], since: int, unpersisted: bool) -> list[pb.Fragment]:
    """The fragments to read, ordered by offset, none inside another.

    Persisted fragments with a mod_time before `since` (unix seconds, 0: all)
    are left out, as `journals read --since` does; unpersisted ones too unless
    `unpersisted`.
    """
    cover = CoverSet()
    for f in sorted(fragments, key=lambda f: (f.begin, -f.end)):
        if is_persisted(f) and f.mod_time < since:
            continue
        if not is_persisted(f) and not unpersisted:
            continue
        cover.add(IndexEntry(f))
    return [entry.fragment for entry in cover if entry.fragment.end > entry.fragment.begin]


def plan_frame(selection: Selection, *, broker: str, since: int = 0, unpersisted: bool = True,
               file_root: str | None = None, file_only: bool = False,
               client: ClientConfig | None = None, ring_size: int = 8192,
               words: Words = GAZCTL) -> FramePlan:
    """One task per selected journal with content to read (pure: no I/O).

    `client` is the TLS and authorization executors read unpersisted content
    from `broker` with; `words` name the selector and file root in messages.
    """
    plan = FramePlan(kind=shared_kind([spec for spec, _ in selection.journals], words),
                     suspended=list(selection.suspended))
    for spec, fragments in sorted(selection.journals, key=lambda j: j[0].name):
        chosen = covering(list(fragments), since, unpersisted)
        plan.unpersisted_skipped += sum(1 for f in fragments if not is_persisted(f)
                                        and not unpersisted)
        check_file_root([f for f in chosen if is_persisted(f)], file_root, file_only, words)
        if not chosen:
            continue
        plan.bytes_total += sum(f.end - f.begin for f in chosen)
        plan.tasks.append(JournalTask(
            journal=spec.name, kind=plan.kind,
            fragments=tuple(f.SerializeToString() for f in chosen),
            broker=broker if any(not is_persisted(f) for f in chosen) else "",
            file_root=file_root or "", file_only=file_only, ring_size=ring_size,
            client=client))
    return plan
