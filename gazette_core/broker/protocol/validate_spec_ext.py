"""Validation of JournalSpec and its parts, with dotted field paths.

Errors name the field path from the message root (`fragment.stores[0]`) and a
reason naming the offending value. Import through `validate_ext`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from gazette_core.broker.fragment import postfix
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.durations_ext import (
    format_go_nanos,
    to_nanos,
    validate_duration,
)
from gazette_core.broker.protocol.fragment_ext import codec_valid
from gazette_core.broker.protocol.labels_ext import (
    CONTENT_TYPE,
    MESSAGE_SUB_TYPE,
    MESSAGE_TYPE,
    META_NAME,
    META_PREFIX,
    SINGLE_VALUE_LABELS,
    join_path,
    validate_label_set,
)
from gazette_core.broker.protocol.names_ext import (
    MAX_JOURNAL_NAME_LEN,
    quote,
    validate_journal_name,
    validate_path_component,
    validate_store_url,
)
from gazette_core.errors import ValidationError

MAX_REPLICATION = 5
MIN_FRAGMENT_LENGTH, MAX_FRAGMENT_LENGTH = 1024, 1 << 34
MIN_REFRESH_NANOS, MAX_REFRESH_NANOS = 10**9, 24 * 3600 * 10**9
MIN_FLUSH_NANOS = 60 * 10**9
VALID_FLAGS = (0, 1, 2, 4)

# RFC 2045 token characters: printable ASCII except tspecials.
_MIME_TOKEN = r"[!#$%&'*+\-.^_`{|}~0-9A-Za-z]+"
_MEDIA = re.compile(rf"\s*{_MIME_TOKEN}(/{_MIME_TOKEN})?\s*")
_PARAM = re.compile(rf"\s*({_MIME_TOKEN})\s*=\s*({_MIME_TOKEN}|\"(?:[^\"\\]|\\.)*\")\s*")


@contextmanager
def within(prefix: str) -> Iterator[None]:
    """Prefix the path of any ValidationError raised inside with `prefix`."""
    try:
        yield
    except ValidationError as exc:
        raise exc.prefixed(prefix) from None


def expect_range(value: int, low: int, high: int, field: str, path: str = "") -> None:
    """Require `low <= value <= high`; the error is at `path` (default `field`)."""
    if not low <= value <= high:
        raise ValidationError(path or field, f"expected {low} <= {field} <= {high} (got {value})")


def validate_status(status: int, path: str = "status") -> None:
    """A known Status value."""
    if status not in pb.Status.values():
        raise ValidationError(path, f"invalid status {status}")


def validate_media_type(value: str, path: str) -> None:
    """`type/subtype[; k=v]`, as Go's mime.ParseMediaType accepts it."""
    media, *params = value.split(";")
    reason = ""
    if not _MEDIA.fullmatch(media):
        reason = "expected type/subtype"
    seen: set[str] = set()
    for index, param in enumerate(params):
        if reason or (not param.strip() and index == len(params) - 1):
            break  # A single trailing ";" is tolerated.
        match = _PARAM.fullmatch(param)
        if not match or match.group(1).lower() in seen:
            reason = f"invalid parameter {quote(param.strip())}"
        else:
            seen.add(match.group(1).lower())
    if reason:
        raise ValidationError(path, f"{quote(value)} is not a valid MIME media type ({reason})")


def validate_spec_labels(
    ls: pb.LabelSet, path: str, reserved: tuple[str, ...] = (META_NAME, META_PREFIX)
) -> None:
    """Labels of a spec: a valid set, no reserved names, well-known label rules."""
    validate_label_set(ls, False, path)
    names = {label.name for label in ls.labels}
    for index, label in enumerate(ls.labels):
        here = join_path(path, f"labels[{index}]")
        if label.name in reserved:
            raise ValidationError(
                join_path(here, "name"), f"label name {quote(label.name)} is reserved"
            )
        if label.name in SINGLE_VALUE_LABELS and index and ls.labels[index - 1].name == label.name:
            raise ValidationError(here, f"label {quote(label.name)} may have only one value")
        if label.name == CONTENT_TYPE:
            validate_media_type(label.value, join_path(here, "value"))
        for needs, needed in ((MESSAGE_TYPE, CONTENT_TYPE), (MESSAGE_SUB_TYPE, MESSAGE_TYPE)):
            if label.name == needs and needed not in names:
                raise ValidationError(
                    here, f"label {quote(needs)} requires a {quote(needed)} label"
                )


def validate_path_postfix_template(template: str, path: str) -> None:
    """Every `{{` closes with `}}` before the next `{{`; no stray `}}`; no empty action.

    Go text/template is not implemented; this catches the malformed cases.
    """
    pos = 0
    while True:
        start, stray = template.find("{{", pos), template.find("}}", pos)
        if stray != -1 and (start == -1 or stray < start):
            raise ValidationError(path, f'unexpected "}}}}" at index {stray} of {quote(template)}')
        if start == -1:
            return
        end = template.find("}}", start + 2)
        if end == -1:
            raise ValidationError(path, f'unclosed "{{{{" at index {start} of {quote(template)}')
        if not template[start + 2 : end].strip(" -"):
            raise ValidationError(path, f"empty action at index {start} of {quote(template)}")
        pos = end + 2


def validate_path_postfix_evaluates(spec: pb.JournalSpec, path: str) -> None:
    """The template evaluates, for a sample spool of `spec`, to a clean relative path.

    The persister evaluates it on every roll, and a spool whose postfix fails
    is never persisted; a `..` in the result would leave the journal's prefix.
    """
    try:
        value = postfix.sample(spec)
    except ValidationError as exc:
        raise ValidationError(path, exc.reason) from None
    try:
        validate_path_component(value, 0, MAX_JOURNAL_NAME_LEN, path)
    except ValidationError as exc:
        raise ValidationError(
            path, f"the postfix it gives for a sample spool is invalid: {exc.reason}"
        ) from None


def _validate_durations(f: pb.JournalSpec.Fragment) -> None:
    for field in ("refresh_interval", "retention", "flush_interval"):
        validate_duration(getattr(f, field), field)
    refresh = to_nanos(f.refresh_interval)
    if not MIN_REFRESH_NANOS <= refresh <= MAX_REFRESH_NANOS:
        raise ValidationError(
            "refresh_interval",
            f"expected {format_go_nanos(MIN_REFRESH_NANOS)} <= refresh_interval <= "
            f"{format_go_nanos(MAX_REFRESH_NANOS)} (got {format_go_nanos(refresh)})",
        )
    flush = to_nanos(f.flush_interval)
    if flush != 0 and flush < MIN_FLUSH_NANOS:
        raise ValidationError(
            "flush_interval",
            f"expected flush_interval == 0s or flush_interval >= "
            f"{format_go_nanos(MIN_FLUSH_NANOS)} (got {format_go_nanos(flush)})",
        )


def validate_journal_spec_fragment(f: pb.JournalSpec.Fragment) -> None:
    """Fragment length, codec, stores, intervals and postfix template."""
    expect_range(f.length, MIN_FRAGMENT_LENGTH, MAX_FRAGMENT_LENGTH, "length")
    if not codec_valid(f.compression_codec):
        raise ValidationError(
            "compression_codec", f"invalid compression codec {f.compression_codec}"
        )
    for index, store in enumerate(f.stores):
        validate_store_url(store, f"stores[{index}]")
    if (
        f.compression_codec == pb.GZIP_OFFLOAD_DECOMPRESSION
        and f.stores
        and urlsplit(f.stores[0]).scheme == "file"
    ):
        raise ValidationError(
            "compression_codec",
            f"GZIP_OFFLOAD_DECOMPRESSION cannot be used with the file store "
            f"{quote(f.stores[0])} (stores[0])",
        )
    _validate_durations(f)
    validate_path_postfix_template(f.path_postfix_template, "path_postfix_template")


def validate_journal_spec_suspend(s: pb.JournalSpec.Suspend) -> None:
    """Level NONE, PARTIAL or FULL; offset >= 0."""
    if s.level not in pb.JournalSpec.Suspend.Level.values():
        raise ValidationError(
            "level", f"expected level NONE (0), PARTIAL (1) or FULL (2) (got {s.level})"
        )
    if s.offset < 0:
        raise ValidationError("offset", f"expected offset >= 0 (got {s.offset})")


def validate_journal_spec(spec: pb.JournalSpec) -> None:
    """A JournalSpec, per the rules Go brokers apply on Apply and on load."""
    validate_journal_name(spec.name, "name")
    expect_range(spec.replication, 1, MAX_REPLICATION, "replication")
    validate_spec_labels(spec.labels, "labels")
    with within("fragment"):
        validate_journal_spec_fragment(spec.fragment)
        validate_path_postfix_evaluates(spec, "path_postfix_template")
    if spec.flags not in VALID_FLAGS:
        raise ValidationError(
            "flags", f"expected flags to be one of 0, 1, 2 or 4 (got {spec.flags})"
        )
    if spec.max_append_rate < 0:
        raise ValidationError(
            "max_append_rate", f"expected max_append_rate >= 0 (got {spec.max_append_rate})"
        )
    if spec.HasField("suspend"):
        with within("suspend"):
            validate_journal_spec_suspend(spec.suspend)
