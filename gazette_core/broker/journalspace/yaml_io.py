"""Journal trees to and from YAML text.

Each node is a mapping of its own JournalSpec fields (see `spec_yaml`) plus the
tree keys `delete`, `revision`, `comment` and `children`. Decoding is strict and
reports YAML syntax errors, unknown keys and mistyped values as ValidationErrors
with their line. Decoding does not check the tree's structure; `validate_tree`
(or `push_down`) does.
"""

from __future__ import annotations

import io
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from gazette_core.broker.journalspace.node import Node, child_path, join_path
from gazette_core.broker.journalspace.spec_yaml import (
    decode_spec,
    spec_from_yaml_dict,
    spec_to_yaml_dict,
)
from gazette_core.broker.journalspace.yaml_values import (
    INT64,
    as_bool,
    as_int,
    as_list,
    as_str,
    item_line,
    key_line,
)
from gazette_core.errors import ValidationError

__all__ = ["dump_tree", "dump_yaml", "load_tree", "parse_yaml", "spec_from_yaml_dict",
           "spec_to_yaml_dict"]

TREE_KEYS = ("delete", "revision", "comment", "children")
# Far deeper than any journal tree; decoding recurses per level, and the YAML parser
# itself runs out of Python stack a few hundred levels down.
MAX_DEPTH = 100
TOO_DEEP = f"YAML nested deeper than {MAX_DEPTH} levels"
# Values (each mapping value and list item, an alias counting the values it stands for)
# a document may hold. Far more than a few MiB of specs hold, while a "billion laughs"
# document of a dozen lines, whose aliases of aliases stand for billions of values, is
# refused once this many were counted instead of being walked for minutes.
MAX_VALUES = 1 << 21
TOO_MANY = (f"YAML document holds more than {MAX_VALUES} values once its aliases are "
            "expanded (aliases of aliases?)")


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.default_flow_style = False
    # Long store URLs and templates stay on one line.
    yaml.width = 1 << 16
    return yaml


def load_tree(text: str) -> Node:
    """Decodes a journal tree; an empty document is an empty root."""
    data = parse_yaml(text)
    if data is None:
        return Node()
    return _decode_node(data, "", None)


def parse_yaml(text: str) -> Any:
    """The document of `text`, with position marks; syntax errors and nesting deeper
    than MAX_DEPTH are ValidationErrors with their line (shared with shard sets)."""
    try:
        data = _yaml().load(text)
    except RecursionError:
        raise ValidationError("", TOO_DEEP) from None
    except MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = err.problem or err.context or "malformed document"
        raise ValidationError("", f"invalid YAML{where}: {problem}") from err
    except YAMLError as err:
        raise ValidationError("", f"invalid YAML: {err}") from err
    if data is not None:
        _check_shape(data)
    return data


def _check_shape(data: Any) -> None:
    """Refuse `data` nested deeper than MAX_DEPTH or holding more than MAX_VALUES values.

    Walked without recursion, and as decoding will walk it: an alias is walked
    again each time it is used, so it counts as often.
    """
    pending, count = [(data, 1)], 0
    while pending:
        value, level = pending.pop()
        if level > MAX_DEPTH:
            raise ValidationError("", TOO_DEEP)
        if isinstance(value, dict):
            children = list(value.values())
        elif isinstance(value, list):
            children = value
        else:
            continue
        count += len(children)
        if count > MAX_VALUES:
            raise ValidationError("", TOO_MANY)
        pending += [(v, level + 1) for v in children]


def _decode_node(data: Any, path: str, line: int | None) -> Node:
    spec = decode_spec(data, path, line, TREE_KEYS)
    node = Node(name=spec.name, spec=spec)
    spec.ClearField("name")
    for key in TREE_KEYS:
        if key in data:
            _decode_tree_field(node, key, data, path)
    return node


def _decode_tree_field(node: Node, key: str, data: Any, node_path: str) -> None:
    value, path, line = data[key], join_path(node_path, key), key_line(data, key)
    if key == "delete":
        node.delete = None if value is None else as_bool(value, path, line)
    elif key == "revision":
        node.revision = as_int(value, path, line, INT64)
    elif key == "comment":
        # An empty comment is no comment, so it round-trips as absent.
        node.comment = as_str(value, path, line) or None
    else:
        items = as_list(value, path, line)
        node.children = [
            _decode_node(item, child_path(node_path, index), item_line(items, index))
            for index, item in enumerate(items)
        ]


def dump_tree(node: Node) -> str:
    """Encodes a journal tree; an empty root is `{}`."""
    return dump_yaml(_encode_node(node))


def dump_yaml(data: Any) -> str:
    """`data` as block-style YAML, long strings kept on one line (shared with shard sets)."""
    stream = io.StringIO()
    _yaml().dump(data, stream)
    return stream.getvalue()


def _encode_node(node: Node) -> CommentedMap:
    spec = type(node.spec)()
    spec.CopyFrom(node.spec)
    spec.name = node.name
    out = CommentedMap()
    out.update(spec_to_yaml_dict(spec))
    if node.delete is not None:
        out["delete"] = node.delete
    if node.revision:
        out["revision"] = node.revision
    if node.comment:
        out["comment"] = node.comment
    if node.children:
        out["children"] = [_encode_node(child) for child in node.children]
    return out
