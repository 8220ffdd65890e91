"""Response headers of the HTTP gateway, computed from RPC responses.

See docs/design/servers.md#content-gateway.

`X-Route-Token` carries the Route in protobuf *compact text* as Go's gogo
`proto.CompactTextString` prints it (`members:<zone:"a" suffix:"b" > ...`),
which differs from Python's text_format, so it is printed here.
"""

from __future__ import annotations

import posixpath
from email.utils import formatdate
from urllib.parse import quote, urlsplit

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.fragment_ext import content_name, sum_to_hex

ROUTE_TOKEN = "X-Route-Token"
FRAGMENT_NAME = "X-Fragment-Name"
FRAGMENT_LAST_MODIFIED = "X-Fragment-Last-Modified"
FRAGMENT_LOCATION = "X-Fragment-Location"
WRITE_HEAD = "X-Write-Head"
CLOSE_ERROR = "X-Close-Error"
COMMIT_BEGIN = "X-Commit-Begin"
COMMIT_END = "X-Commit-End"
COMMIT_SUM = "X-Commit-SHA1-Sum"
MAX_INT64 = (1 << 63) - 1

Headers = list[tuple[str, str]]


def compact_text_string(value: str) -> str:
    """A string as Go's text marshaler quotes it: byte-wise, octal for non-printables."""
    out = ['"']
    for byte in value.encode():
        ch = chr(byte)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif 0x20 <= byte < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    out.append('"')
    return "".join(out)


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", '"': '\\"', "\\": "\\\\"}


def route_compact_text(route: pb.Route) -> str:
    """The Route as `proto.CompactTextString`; proto3 zero values are left out."""
    parts = []
    for member in route.members:
        inner = "".join(f"{name}:{compact_text_string(text)} " for name, text in
                        (("zone", member.zone), ("suffix", member.suffix)) if text)
        parts.append(f"members:<{inner}> ")
    if route.primary:
        parts.append(f"primary:{route.primary} ")
    parts.extend(f"endpoints:{compact_text_string(e)} " for e in route.endpoints)
    return "".join(parts)


def route_headers(header: pb.Header, request_path: str) -> Headers:
    """X-Route-Token and Location (the primary's endpoint joined with the request path)."""
    route = header.route
    if not route.members:
        return []
    # HTTP trims trailing whitespace of field values; Go's server sends it trimmed too.
    out = [(ROUTE_TOKEN, route_compact_text(route).strip())]
    if route.primary != -1 and 0 <= route.primary < len(route.endpoints):
        out.append(("Location", _join_url(route.endpoints[route.primary], request_path)))
    return out


def _join_url(endpoint: str, request_path: str) -> str:
    """`endpoint` with `request_path` joined to its path, as Go's path.Join and URL.String do."""
    parts = urlsplit(endpoint)
    joined = "/".join(p for p in (parts.path, request_path) if p)
    path = posixpath.normpath(joined) if joined else ""
    if path.startswith("//"):  # normpath keeps a leading "//"; Go's path.Clean does not
        path = "/" + path.lstrip("/")
    # Built by hand: urlunsplit would drop the "//" of an empty host (unix:///path).
    return f"{parts.scheme}://{parts.netloc}{quote(path, safe=_PATH_SAFE)}"


# Besides letters, digits and "-._~", what Go leaves unescaped in a URL path.
_PATH_SAFE = "$&+,/:;=@"


def read_headers(resp: pb.ReadResponse, request_path: str) -> Headers:
    """Headers of the first metadata response of a Read (docs/design/servers.md#content-gateway)."""
    out = route_headers(resp.header, request_path) if resp.HasField("header") else []
    if resp.HasField("fragment"):
        frag = resp.fragment
        out.append((FRAGMENT_NAME, content_name(frag)))
        if frag.mod_time:
            out.append((FRAGMENT_LAST_MODIFIED, formatdate(frag.mod_time, usegmt=True)))
        if resp.fragment_url:
            out.append((FRAGMENT_LOCATION, resp.fragment_url))
        out.append(("Content-Range", f"bytes {resp.offset}-{MAX_INT64}/{MAX_INT64}"))
    if resp.write_head:
        out.append((WRITE_HEAD, str(resp.write_head)))
    return out


def append_headers(resp: pb.AppendResponse, request_path: str) -> Headers:
    """Headers of a successful append (docs/design/servers.md#content-gateway)."""
    out = route_headers(resp.header, request_path)
    if resp.HasField("commit"):
        commit = resp.commit
        out += [(COMMIT_BEGIN, str(commit.begin)), (COMMIT_END, str(commit.end)),
                (WRITE_HEAD, str(commit.end)), (COMMIT_SUM, sum_to_hex(commit.sum))]
    return out
