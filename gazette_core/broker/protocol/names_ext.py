"""Character classes, path components, journal names and fragment store URLs.

These are the leaf checks every other validator builds on. They live in one
module below `labels_ext`, `fragment_ext` and `validate_ext` so those can all
use them without importing each other. Lengths are measured in utf-8 bytes,
as Go measures them.
"""

from __future__ import annotations

import json
import unicodedata
from urllib.parse import SplitResult, unquote, urlsplit

from gazette_core.errors import ECHO_LIMIT, ValidationError, elision

TOKEN_SYMBOLS = "-_+/."
PATH_SYMBOLS = TOKEN_SYMBOLS + "=%"
MIN_JOURNAL_NAME_LEN = 4
MAX_JOURNAL_NAME_LEN = 512
STORE_SCHEMES = ("s3", "gs", "azure", "azure-ad", "file")
META_SEPARATOR = ";"


def quote(value: str) -> str:
    """`value` double-quoted with escapes, and cut short if long, for error messages."""
    text = json.dumps(value[:ECHO_LIMIT], ensure_ascii=False)
    return text if len(value) <= ECHO_LIMIT else text + elision(value)


def is_allowed_char(ch: str, symbols: str) -> bool:
    """Whether `ch` is a letter, a number or one of `symbols`."""
    # Go's unicode.IsLetter / IsNumber are the L* and N* general categories.
    return ch in symbols or unicodedata.category(ch)[0] in "LN"


def validate_length(value: str, min_len: int, max_len: int, path: str) -> None:
    """Require `min_len <= len(utf-8 bytes of value) <= max_len`."""
    size = len(value.encode("utf-8"))
    if not min_len <= size <= max_len:
        raise ValidationError(
            path,
            f"invalid length of {quote(value)}: expected {min_len} <= length <= {max_len} "
            f"bytes (got {size})",
        )


def _validate_chars(value: str, symbols: str, min_len: int, max_len: int, path: str) -> None:
    validate_length(value, min_len, max_len, path)
    for index, ch in enumerate(value):
        if not is_allowed_char(ch, symbols):
            raise ValidationError(
                path,
                f"invalid character {quote(ch)} at index {index} of {quote(value)} "
                f"(allowed: letters, numbers and {symbols})",
            )


def validate_token(value: str, min_len: int, max_len: int, path: str) -> None:
    """Token class: letters, numbers and `-_+/.` (label names, zones, suffixes)."""
    _validate_chars(value, TOKEN_SYMBOLS, min_len, max_len, path)


def validate_path_chars(value: str, min_len: int, max_len: int, path: str) -> None:
    """Path class: token characters plus `=` and `%` (journal names, label values)."""
    _validate_chars(value, PATH_SYMBOLS, min_len, max_len, path)


def validate_clean_path(value: str, path: str) -> None:
    """Require a clean relative path: no leading/trailing `/`, no `//`, `.` or `..`."""
    if not value:
        return
    if value.startswith("/"):
        raise ValidationError(path, f'{quote(value)} must not begin with "/"')
    segments = value.split("/")
    if any(seg in ("", ".", "..") for seg in segments):
        raise ValidationError(
            path,
            f'{quote(value)} must be a clean path (no "//", no "." or ".." segments, '
            f'no trailing "/")',
        )


def validate_path_component(value: str, min_len: int, max_len: int, path: str) -> None:
    """Path characters of the given byte length, forming a clean relative path."""
    validate_path_chars(value, min_len, max_len, path)
    validate_clean_path(value, path)


def split_meta(journal: str) -> tuple[str, str]:
    """Split `name;meta` into (name, meta); meta is "" when absent."""
    name, _, meta = journal.partition(META_SEPARATOR)
    return name, meta


def strip_meta(journal: str) -> str:
    """The journal name without any `;meta` suffix (used for routing)."""
    return split_meta(journal)[0]


# Names that passed validation, by whether `;meta` was allowed: every append and
# replicated proposal names its journal, and re-checking it char by char each time
# costs microseconds on that path. Bounded, and cleared when full.
_VALID_NAMES: set[tuple[str, bool]] = set()
VALID_NAMES_CAPACITY = 4096


def validate_journal_name(name: str, path: str = "journal", *, allow_meta: bool = False) -> None:
    """A journal name: path chars, 4-512 bytes, clean; `;meta` only if `allow_meta`."""
    if (name, allow_meta) in _VALID_NAMES:
        return
    _check_journal_name(name, path, allow_meta)
    if len(_VALID_NAMES) >= VALID_NAMES_CAPACITY:
        _VALID_NAMES.clear()
    _VALID_NAMES.add((name, allow_meta))


def _check_journal_name(name: str, path: str, allow_meta: bool) -> None:
    base, meta = split_meta(name)
    if META_SEPARATOR in name and not allow_meta:
        raise ValidationError(path, f'{quote(name)} must not carry a ";meta" suffix here')
    validate_path_component(base, MIN_JOURNAL_NAME_LEN, MAX_JOURNAL_NAME_LEN, path)
    if META_SEPARATOR in name:
        validate_path_chars(meta, 1, MAX_JOURNAL_NAME_LEN, path)


def parse_url(value: str, path: str) -> SplitResult:
    """Split `value` as a URL, raising ValidationError where Go's url.Parse would fail."""
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018  -- raises ValueError on a malformed port
    except ValueError as exc:
        raise ValidationError(path, f"{quote(value)} is not a valid URL ({exc})") from None
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value):
        raise ValidationError(path, f"{quote(value)} is not a valid URL (control character)")
    return parts


def validate_endpoint(value: str, path: str) -> None:
    """A process endpoint: an absolute URL with a host (`http://h:p`, `unix://h/p`)."""
    parts = parse_url(value, path)
    if not parts.scheme:
        raise ValidationError(path, f"{quote(value)} is not an absolute URL")
    if not parts.netloc:
        raise ValidationError(path, f"{quote(value)} is missing a host")


def has_parent_segment(url_path: str) -> bool:
    """Whether a URL path has a `..` segment (also percent-encoded), which could leave a root."""
    return any(unquote(segment) == ".." for segment in url_path.split("/"))


def validate_store_url(value: str, path: str = "store") -> None:
    """A fragment store URL per its scheme's rules; the URL path must end in `/`."""
    parts = parse_url(value, path)
    if not parts.scheme:
        raise ValidationError(path, f"{quote(value)} is not an absolute URL")
    if parts.scheme not in STORE_SCHEMES:
        raise ValidationError(
            path,
            f"invalid scheme {quote(parts.scheme)} of {quote(value)} "
            f"(expected one of {', '.join(STORE_SCHEMES)})",
        )
    if parts.scheme == "file" and parts.netloc:
        raise ValidationError(path, f"file store URL {quote(value)} must not have a host")
    if parts.scheme != "file" and not parts.netloc:
        raise ValidationError(
            path, f"store URL {quote(value)} is missing a host (bucket, container or tenant)"
        )
    if not parts.path.endswith("/"):
        raise ValidationError(path, f'path of store URL {quote(value)} must end in "/"')
    if has_parent_segment(parts.path):
        raise ValidationError(
            path, f'path of store URL {quote(value)} must not have ".." segments'
        )
    if parts.scheme == "azure-ad" and len([s for s in parts.path.split("/") if s]) < 2:
        raise ValidationError(
            path,
            f"azure-ad store URL {quote(value)} must name an account and a container "
            f"(azure-ad://<tenant>/<account>/<container>/)",
        )
