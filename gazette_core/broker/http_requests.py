"""Requests of the HTTP gateway: journal from the URL path, options from the query string.

Query parameters are decoded as Go's gorilla/schema does for Gazette: names
match case-insensitively, the last of repeated values wins, an empty value
leaves the default, and unknown names or unparseable values are errors with
gorilla's texts (answered with 400 by the gateway).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import unquote_plus

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.names_ext import validate_journal_name
from gazette_core.broker.protocol.validate_ext import validate_read_request
from gazette_core.errors import GazetteError

_INT64 = re.compile(r"[+-]?[0-9]+")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})(.{0,2})", re.DOTALL)
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True", "on"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


class QueryError(GazetteError):
    """A query string the gateway cannot decode (HTTP 400)."""


def _int64(text: str) -> int | None:
    if not _INT64.fullmatch(text):
        return None
    value = int(text)
    return value if -(1 << 63) <= value < (1 << 63) else None


def _bool(text: str) -> bool | None:
    return True if text in _TRUE else False if text in _FALSE else None


def parse_query(raw: str, schema: dict[str, Callable[[str], object]]) -> dict[str, object]:
    """Decode `raw` against `schema` (lower-case name -> parser returning None if invalid)."""
    if ";" in raw:
        raise QueryError("invalid semicolon separator in query")
    values: dict[str, tuple[str, str]] = {}
    for pair in raw.split("&") if raw else ():
        if not pair:
            continue
        key, _, value = pair.partition("=")
        if bad := _BAD_ESCAPE.search(pair):
            raise QueryError(f'invalid URL escape "{bad.group(0)}"')
        key, value = unquote_plus(key), unquote_plus(value)
        values[key.lower()] = (key, value)  # gorilla keeps the last value
    errors: list[str] = []
    out: dict[str, object] = {}
    for name, (key, value) in values.items():
        parser = schema.get(name)
        if parser is None:
            errors.append(f'schema: invalid path "{key}"')
        elif value != "":
            parsed = parser(value)
            if parsed is None:
                errors.append(f'schema: error converting value for "{key}"')
            else:
                out[name] = parsed
    if errors:
        raise QueryError(_multi_error(errors))
    return out


def _multi_error(errors: list[str]) -> str:
    """gorilla/schema's MultiError text: the first error and how many others."""
    others = len(errors) - 1
    if not others:
        return errors[0]
    return f"{errors[0]} (and {others} other error{'s' if others > 1 else ''})"


def read_request(path: str, query: str, head: bool) -> pb.ReadRequest:
    """The ReadRequest of `GET|HEAD /<journal>?offset=&block=`; raises GazetteError if bad."""
    options = parse_query(query, {"offset": _int64, "block": _bool})
    offset, block = options.get("offset", 0), options.get("block", False)
    assert isinstance(offset, int) and isinstance(block, bool)
    req = pb.ReadRequest(journal=path[1:], offset=offset, block=block, metadata_only=head)
    validate_read_request(req)
    return req


def append_journal(path: str, query: str) -> str:
    """The journal of `PUT /<journal>`, which takes no query parameters."""
    parse_query(query, {})
    journal = path[1:]
    validate_journal_name(journal, "journal", allow_meta=True)
    return journal
