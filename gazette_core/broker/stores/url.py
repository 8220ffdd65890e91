"""Parsed fragment store URLs and their `find`/`replace` path rewriting.

A store URL (docs/design/fragments.md#store-urls) is absolute, its path ends in `/`, and its query
parameters configure the store; names match case-insensitively. `find` and
`replace` rewrite the first occurrence of `find` in a journal-relative path,
which keeps old object paths reachable after a journal is renamed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlsplit

from gazette_core.broker.protocol.names_ext import has_parent_segment
from gazette_core.errors import ValidationError, shown

# Query parameters every store accepts.
COMMON_PARAMS = frozenset({"find", "replace"})


@dataclass(frozen=True, slots=True)
class PathRewrite:
    """Replace the first occurrence of `find` with `replace`; a no-op without `find`."""

    find: str = ""
    replace: str = ""

    def apply(self, path: str) -> str:
        if not self.find:
            return path
        return path.replace(self.find, self.replace, 1)


@dataclass(frozen=True, slots=True)
class StoreURL:
    """The parts of a store URL; `raw` is the URL string exactly as configured."""

    raw: str
    scheme: str
    host: str
    path: str
    params: dict[str, str] = field(default_factory=dict)

    @property
    def rewrite(self) -> PathRewrite:
        return PathRewrite(self.params.get("find", ""), self.params.get("replace", ""))

    @property
    def prefix(self) -> str:
        """The URL path without its leading `/`: the key prefix inside a bucket or root."""
        return self.path.lstrip("/")


def parse_store_url(raw: str) -> StoreURL:
    """Split and check a store URL; raises ValidationError naming what is wrong."""
    try:
        parts = urlsplit(raw)
    except ValueError as exc:
        raise ValidationError("store", f"cannot parse {shown(raw)}: {exc}") from exc
    if not parts.scheme:
        raise ValidationError("store", f"{shown(raw)} is not an absolute URL")
    if not parts.path.endswith("/"):
        raise ValidationError("store", f"path of store URL {shown(raw)} must end in '/'")
    if has_parent_segment(parts.path):
        raise ValidationError("store",
                              f"path of store URL {shown(raw)} must not have '..' segments")
    if parts.scheme == "file" and parts.netloc:
        raise ValidationError("store", f"file store URL {shown(raw)} must not have a host")
    if parts.scheme != "file" and not parts.netloc:
        raise ValidationError("store", f"store URL {shown(raw)} is missing a host")
    params: dict[str, str] = {}
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        params[name.lower()] = value
    return StoreURL(raw, parts.scheme, parts.netloc, parts.path, params)


def check_params(url: StoreURL, allowed: frozenset[str]) -> None:
    """Refuse query parameters outside `allowed` (plus find/replace)."""
    for name in sorted(url.params):
        if name not in allowed and name not in COMMON_PARAMS:
            raise ValidationError(
                "store", f"unknown query parameter {shown(name)} in store URL {shown(url.raw)}"
            )
