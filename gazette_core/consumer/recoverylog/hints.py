"""FSMHints: where a player finds a log's live data, and their Etcd encoding.

Hints name each live Fnode with the segments holding its ops, plus property
files. In Etcd they are Go `encoding/json` output of the generated struct:
compact, snake_case keys, omitempty scalars, `null` for empty lists, live
nodes sorted by Fnode. `encode_hints` reproduces those bytes exactly;
`decode_hints` also reads binary protobuf when the first byte is not `{`.
"""

from __future__ import annotations

import json
from typing import Any

from google.protobuf.message import DecodeError

from gazette_core.broker.protocol.names_ext import quote, validate_journal_name
from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.consumer.recoverylog.segments import SegmentSet, validate_segment
from gazette_core.errors import ValidationError


class HintsError(ValidationError):
    """FSMHints are invalid or cannot be decoded."""


def validate_hints(h: rpb.FSMHints) -> None:
    """Check hints field by field; HintsError names the bad field.

    See docs/design/recoverylog.md#segments.
    """
    try:
        if h.log:
            validate_journal_name(h.log, "log")
        for i, node in enumerate(h.live_nodes):
            if not node.segments:
                raise HintsError(f"live_nodes[{i}].segments", "must not be empty")
            for j, seg in enumerate(node.segments):
                path = f"live_nodes[{i}].segments[{j}]"
                validate_segment(seg, path, require_log=False)
                if seg.log == h.log:
                    raise HintsError(f"{path}.log", "must be omitted when it equals hints log")
        for i, prop in enumerate(h.properties):
            if not prop.path.startswith("/"):
                raise HintsError(f"properties[{i}].path", f"{prop.path!r} does not start with /")
    except HintsError:
        raise
    except ValidationError as exc:
        raise HintsError(exc.path, exc.reason) from None
    if h.live_nodes and not h.log:
        raise HintsError("log", "must be set when hints have live nodes")


def live_log_segments(h: rpb.FSMHints) -> tuple[list[int], SegmentSet]:
    """The hinted Fnodes in order and the SegmentSet of all their segments (logs filled in)."""
    fnodes: list[int] = []
    segments = SegmentSet()
    for i, node in enumerate(h.live_nodes):
        if fnodes and node.fnode <= fnodes[-1]:
            raise HintsError(
                f"live_nodes[{i}].fnode", f"{node.fnode} is not after Fnode {fnodes[-1]}"
            )
        if not node.segments or node.segments[0].first_seq_no != node.fnode:
            raise HintsError(
                f"live_nodes[{i}].segments",
                f"first segment must start at seq_no {node.fnode} (the Fnode)",
            )
        fnodes.append(node.fnode)
        for seg in node.segments:
            full = rpb.Segment()
            full.CopyFrom(seg)
            full.log = seg.log or h.log
            try:
                segments.add(full)
            except ValidationError as exc:
                raise HintsError(f"live_nodes[{i}].segments", exc.reason) from None
    if len(segments) and segments[-1].log != h.log:
        raise HintsError(
            "live_nodes", f"last segment is in log {segments[-1].log!r}, not hints log {h.log!r}"
        )
    return fnodes, segments


def validate_shard_hints(h: rpb.FSMHints, log_name: str) -> None:
    """Hints a shard whose recovery log is `log_name` can recover from.

    The one check of both sides: Apply refuses `primary_hints` that fail it,
    and hints read from Etcd that fail it fail the read. Field by field, then
    as playback follows them (each Fnode's first segment starts at it, segments
    ordered and ending in the hints' log), naming the shard's own log.
    """
    validate_hints(h)
    live_log_segments(h)
    if h.log != log_name:
        raise HintsError(
            "log", f"expected the shard's recovery log {quote(log_name)} (got {quote(h.log)})"
        )


# --- Go encoding/json byte-compatible encoding --------------------------------------------

_ESCAPES = {
    '"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f",
    "<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029",
}


def _go_string(s: str) -> str:
    """A JSON string as Go's encoding/json writes it (HTML-safe escapes, raw UTF-8)."""
    out = ['"']
    for ch in s:
        esc = _ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif ch < " ":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _fields(pairs: list[tuple[str, int | str]]) -> str:
    """`"key":value` pairs with zero values left out (omitempty)."""
    parts = []
    for key, value in pairs:
        if value in (0, ""):
            continue
        shown = _go_string(value) if isinstance(value, str) else str(value)
        parts.append(f'"{key}":{shown}')
    return ",".join(parts)


def _list(items: list[str]) -> str:
    return "[" + ",".join(items) + "]" if items else "null"


def _segment_json(seg: rpb.Segment) -> str:
    return "{" + _fields([
        ("author", seg.author), ("first_seq_no", seg.first_seq_no),
        ("first_offset", seg.first_offset), ("first_checksum", seg.first_checksum),
        ("last_seq_no", seg.last_seq_no), ("last_offset", seg.last_offset), ("log", seg.log),
    ]) + "}"


def _node_json(node: rpb.FnodeSegments) -> str:
    head = _fields([("fnode", node.fnode)])
    segs = _list([_segment_json(s) for s in node.segments])
    return "{" + (head + "," if head else "") + f'"segments":{segs}' + "}"


def encode_hints(h: rpb.FSMHints) -> bytes:
    """Hints as Go's json.Marshal writes them (live nodes sorted by Fnode)."""
    head = _fields([("log", h.log)])
    nodes = _list([_node_json(n) for n in sorted(h.live_nodes, key=lambda n: n.fnode)])
    props = _list([
        "{" + _fields([("path", p.path), ("content", p.content)]) + "}" for p in h.properties
    ])
    text = "{" + (head + "," if head else "") + f'"live_nodes":{nodes},"properties":{props}' + "}"
    return text.encode()


# --- decoding ---------------------------------------------------------------------------

_U32 = 2**32 - 1
_I64 = 2**63


def _int(obj: dict[str, Any], key: str, path: str, *, unsigned32: bool = False) -> int:
    value = obj.get(key)
    if value is None:
        return 0
    lo, hi = (0, _U32) if unsigned32 else (-_I64, _I64 - 1)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        kind = "uint32" if unsigned32 else "int64"
        raise HintsError(f"{path}.{key}", f"{value!r} is not a valid {kind}")
    return value


def _str(obj: dict[str, Any], key: str, path: str) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise HintsError(f"{path}.{key}", f"{value!r} is not a string")
    return value


def _objects(obj: dict[str, Any], key: str, path: str) -> list[dict[str, Any]]:
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise HintsError(f"{path}.{key}", "is not a list of objects")
    return value


def _decode_json(data: bytes) -> rpb.FSMHints:
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, ValueError) as exc:
        raise HintsError("", f"hints are not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise HintsError("", "hints JSON is not an object")
    h = rpb.FSMHints(log=_str(doc, "log", "hints"))
    for i, node in enumerate(_objects(doc, "live_nodes", "hints")):
        path = f"live_nodes[{i}]"
        out = h.live_nodes.add(fnode=_int(node, "fnode", path))
        for j, seg in enumerate(_objects(node, "segments", path)):
            sp = f"{path}.segments[{j}]"
            out.segments.add(
                author=_int(seg, "author", sp, unsigned32=True),
                first_seq_no=_int(seg, "first_seq_no", sp),
                first_offset=_int(seg, "first_offset", sp),
                first_checksum=_int(seg, "first_checksum", sp, unsigned32=True),
                last_seq_no=_int(seg, "last_seq_no", sp),
                last_offset=_int(seg, "last_offset", sp),
                log=_str(seg, "log", sp),
            )
    for i, prop in enumerate(_objects(doc, "properties", "hints")):
        path = f"properties[{i}]"
        h.properties.add(path=_str(prop, "path", path), content=_str(prop, "content", path))
    return h


def decode_hints(data: bytes) -> rpb.FSMHints:
    """Hints from JSON, or from binary protobuf when the first byte is not `{`."""
    if data[:1] == b"{":
        return _decode_json(data)
    h = rpb.FSMHints()
    try:
        h.ParseFromString(data)
    except DecodeError as exc:
        raise HintsError("", f"hints are neither JSON nor protobuf ({exc})") from None
    return h
