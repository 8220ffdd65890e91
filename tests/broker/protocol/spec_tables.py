"""Reads message and enum tables written in markdown and compares them with descriptors.

The tables of record are in docs/design/protocol.md ("Messages and fields"); they use the
first shape below. Messages may be described in several shapes, all understood here:

* a table with ``# | Field | Type`` columns under a bold message name, optionally with a
  leading ``Message`` column (an empty cell repeats the message of the row above);
* a table with ``Message | Fields (number: name type)`` columns whose cells hold
  ``1: `selector` LabelSelector (notes); 100`` lists (a bare number names a field that the
  section's prose introduces as ``field N `name` is an opaque TYPE ...``);
* a bold name followed by inline items: ``1 `include` LabelSet (nn) — notes; 2 ...``,
  ``reserved 2, 3``, ``Field 1 is `code` (the Code enum above)``, or ``` `author`=1 fixed32 ```;
* nested fields written inside a type, as in ``Link{`fnode`=1 int64, `path`=2}``.

Types are ``rep``/``repeated`` X, ``map<K, V>``, a scalar keyword or a (possibly qualified)
message or enum name, resolved the way protoc resolves names: innermost scope first, then a
unique match among every type the file can see. A field listed without a type is checked for
its number only, except for the conventional ``status`` and ``header`` response fields.

Enums are tables with ``Name`` and ``#`` (or ``Value``) columns, or inline ``NAME=N`` lists.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import (
    Descriptor,
    EnumDescriptor,
    FieldDescriptor,
    FileDescriptor,
)

SCALARS: dict[str, int] = {
    "double": FieldDescriptor.TYPE_DOUBLE,
    "float": FieldDescriptor.TYPE_FLOAT,
    "int64": FieldDescriptor.TYPE_INT64,
    "uint64": FieldDescriptor.TYPE_UINT64,
    "int32": FieldDescriptor.TYPE_INT32,
    "fixed64": FieldDescriptor.TYPE_FIXED64,
    "fixed32": FieldDescriptor.TYPE_FIXED32,
    "bool": FieldDescriptor.TYPE_BOOL,
    "string": FieldDescriptor.TYPE_STRING,
    "bytes": FieldDescriptor.TYPE_BYTES,
    "uint32": FieldDescriptor.TYPE_UINT32,
    "sfixed32": FieldDescriptor.TYPE_SFIXED32,
    "sfixed64": FieldDescriptor.TYPE_SFIXED64,
    "sint32": FieldDescriptor.TYPE_SINT32,
    "sint64": FieldDescriptor.TYPE_SINT64,
}
_SCALAR_NAMES = {number: name for name, number in SCALARS.items()}

# Response fields the spec often lists by name alone ("1 `status`; 2 `header` (nn)").
CONVENTIONAL_TYPES: dict[str, str] = {"status": "Status", "header": "Header"}

_HEADING = re.compile(r"^#{2,6}\s+(.+?)\s*$")
_BOLD_NAME = re.compile(r"^(?:[-*]\s+)?\*\*`?([A-Za-z_][\w.]*)`?\*\*")
_BOLD_START = re.compile(r"^(?:[-*]\s+)?\*\*")
# "1 `name`" or "1: `name`" (number first).
_NUMBERED = re.compile(r"(?<![\w.=\-])(\d+):?\s+`(\w+)`")
# "Field 1 is `code`".
_FIELD_IS = re.compile(r"\b[Ff]ield (\d+) is `(\w+)`")
# "`name`=1" (name first).
_NAME_EQ = re.compile(r"`(\w+)`\s*=\s*(\d+)")
_RESERVED = re.compile(r"\breserved\s+(\d+(?:\s*,\s*\d+)*)")
_BARE_NUMBER = re.compile(r"(?:^|;)\s*(\d+)\s*(?=;|\.|$)")
_PROSE_FIELD = re.compile(r"\bfield (\d+) `(\w+)` is an? (?:\w+ )*?(" + "|".join(SCALARS) + r")\b")
_ENUM_VALUE = re.compile(r"`?\b([A-Z][A-Z0-9_]*)\b`?\s*=\s*(0[xX][0-9a-fA-F]+|\d+)")
_TYPE = re.compile(
    r"^\s*(?:(rep|repeated)\s+)?(?:(?:the|an?)\s+)?"
    r"(?:map\s*<\s*([\w.]+)\s*,\s*([\w.]+)\s*>|`?([A-Za-z_][\w.]*?)`?(?=[^\w.]|\.?$|\.\s))"
)


class SpecParseError(Exception):
    """The spec text has a shape this reader does not understand."""


@dataclass(frozen=True)
class SpecType:
    """A field type as the spec writes it."""

    name: str  # scalar keyword, message/enum name, or "map"
    repeated: bool = False
    key: str = ""
    value: str = ""

    def __str__(self) -> str:
        if self.name == "map":
            return f"map<{self.key}, {self.value}>"
        return f"repeated {self.name}" if self.repeated else self.name


@dataclass
class SpecField:
    """One field of a spec message."""

    name: str
    number: int
    type: SpecType | None
    where: str
    subfields: list[SpecField] = field(default_factory=list)


@dataclass
class SpecMessage:
    """A message as listed by the spec (fields may come from several places)."""

    name: str
    fields: list[SpecField] = field(default_factory=list)
    reserved: set[int] = field(default_factory=set)
    unused: set[int] = field(default_factory=set)


@dataclass
class SpecEnum:
    """An enum as listed by the spec."""

    name: str
    values: dict[str, int] = field(default_factory=dict)


def _names_section(title: str, section: str) -> bool:
    """Whether heading `title` is `section`: its whole text, or its leading number."""
    return title == section or title.startswith(section + " ") or title.startswith(section + ". ")


def section_text(markdown: str, number: str) -> list[tuple[int, str]]:
    """The (line number, line) pairs of section `number` (a title or a number), up to the
    next heading."""
    out: list[tuple[int, str]] = []
    inside = False
    for lineno, line in enumerate(markdown.splitlines(), start=1):
        heading = _HEADING.match(line)
        if heading:
            inside = _names_section(heading.group(1), number)
            continue
        if line.startswith("#"):
            inside = False
            continue
        if inside:
            out.append((lineno, line))
    if not out:
        raise SpecParseError(f"section {number} not found or empty")
    return out


@dataclass
class _Block:
    kind: str  # "table" or "text"
    lineno: int
    lines: list[str]


def _blocks(lines: list[tuple[int, str]]) -> Iterator[_Block]:
    """Tables, and text segments that each begin at a bold line or after a blank line."""
    current: _Block | None = None
    for lineno, raw in lines:
        line = raw.strip()
        kind = "table" if line.startswith("|") else "text"
        starts_new = (
            not line
            or current is None
            or current.kind != kind
            or (kind == "text" and _BOLD_START.match(line) is not None)
        )
        if starts_new and current is not None:
            yield current
            current = None
        if line:
            if current is None:
                current = _Block(kind, lineno, [])
            current.lines.append(line)
    if current is not None:
        yield current


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _paren_body(text: str) -> str:
    """Content of the parenthesis `text` starts with (nesting respected)."""
    depth = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return text[1:i]
    return text[1:]


def _brace_body(text: str) -> str | None:
    if not text.startswith("{"):
        return None
    end = text.find("}")
    if end < 0:
        raise SpecParseError(f"unbalanced brace in {text!r}")
    return text[1:end]


def parse_type(text: str, where: str) -> tuple[SpecType | None, list[SpecField]]:
    """The type phrase `text` starts with, and any fields listed inside braces after it.

    Text that begins with a parenthesis is read from inside it ("(repeated Property)").
    Lower-case words that are not scalar keywords are prose, not a type, and yield None.
    """
    text = text.strip().lstrip(":").strip()
    if text.startswith("("):
        text = _paren_body(text)
    m = _TYPE.match(text)
    if not m:
        return None, []
    repeated = m.group(1) is not None
    if m.group(2):
        return SpecType("map", key=m.group(2), value=m.group(3)), []
    name = m.group(4)
    if name not in SCALARS and "." not in name and not (name[0].isupper() or name[0] == "_"):
        return None, []
    sub: list[SpecField] = []
    body = _brace_body(text[m.end() :].lstrip())
    if body is not None:
        sub = _name_eq_fields(body, where)
    return SpecType(name, repeated=repeated), sub


def _name_eq_fields(text: str, where: str) -> list[SpecField]:
    """Fields written as ``` `name`=N [type] ``` separated by commas."""
    matches = list(_NAME_EQ.finditer(text))
    out = []
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        tail = text[m.end() : end].strip().rstrip(",.;").strip()
        type_, sub = parse_type(tail, where) if tail else (None, [])
        out.append(SpecField(m.group(1), int(m.group(2)), type_, where, sub))
    return out


def _inline_fields(text: str, where: str) -> list[SpecField]:
    """Fields listed inline after a bold message name or in a "Fields" table cell."""
    found: list[tuple[int, int, str, int]] = []  # (start, end, name, number)
    for m in _NUMBERED.finditer(text):
        found.append((m.start(), m.end(), m.group(2), int(m.group(1))))
    for m in _FIELD_IS.finditer(text):
        found.append((m.start(), m.end(), m.group(2), int(m.group(1))))
    for m in _NAME_EQ.finditer(text):
        found.append((m.start(), m.end(), m.group(1), int(m.group(2))))
    found.sort()
    out = []
    for i, (_start, end, name, number) in enumerate(found):
        stop = found[i + 1][0] if i + 1 < len(found) else len(text)
        tail = text[end:stop].strip()
        if tail.startswith(","):  # "`a`=1, `b`=2": nothing typed between the two
            tail = ""
        type_, sub = parse_type(tail, where) if tail else (None, [])
        out.append(SpecField(name, number, type_, where, sub))
    return out


def parse_enums(markdown: str, number: str, source: str) -> dict[str, SpecEnum]:
    """Every enum of section `number`."""
    enums: dict[str, SpecEnum] = {}
    current: str | None = None
    for block in _blocks(section_text(markdown, number)):
        if block.kind == "text":
            bold = _BOLD_NAME.match(block.lines[0])
            current = bold.group(1) if bold else None
            if current is None:
                continue
            body = " ".join(block.lines)[bold.end() :] if bold else ""
            for m in _ENUM_VALUE.finditer(body):
                enums.setdefault(current, SpecEnum(current)).values[m.group(1)] = int(m.group(2), 0)
            continue
        header = _cells(block.lines[0])
        if "Name" not in header or not ({"#", "Value"} & set(header)):
            continue
        if current is None:
            raise SpecParseError(f"{source}:{block.lineno}: enum table without a bold name")
        name_col = header.index("Name")
        num_col = header.index("#") if "#" in header else header.index("Value")
        enum = enums.setdefault(current, SpecEnum(current))
        for row in block.lines[2:]:
            cells = _cells(row)
            enum.values[cells[name_col].strip("`")] = int(cells[num_col], 0)
    return enums


def parse_messages(markdown: str, number: str, source: str) -> dict[str, SpecMessage]:
    """Every message of section `number`."""
    lines = section_text(markdown, number)
    messages: dict[str, SpecMessage] = {}
    prose = " ".join(line for _, line in lines)
    bare: dict[int, tuple[str, SpecType]] = {
        int(m.group(1)): (m.group(2), SpecType(m.group(3))) for m in _PROSE_FIELD.finditer(prose)
    }
    current: str | None = None
    for block in _blocks(lines):
        where = f"{source}:{block.lineno}"
        if block.kind == "text":
            bold = _BOLD_NAME.match(block.lines[0])
            current = bold.group(1) if bold else None
            if bold is None or current is None:
                continue
            body = " ".join(block.lines)[bold.end() :]
            fields = _inline_fields(body, where)
            reserved = {int(n) for m in _RESERVED.finditer(body) for n in m.group(1).split(",")}
            if fields or reserved:
                message = messages.setdefault(current, SpecMessage(current))
                message.fields.extend(fields)
                message.reserved |= reserved
            continue
        _table_fields(block, current, bare, messages, source)
    return messages


def _table_fields(
    block: _Block,
    current: str | None,
    bare: dict[int, tuple[str, SpecType]],
    messages: dict[str, SpecMessage],
    source: str,
) -> None:
    header = _cells(block.lines[0])
    msg_col = header.index("Message") if "Message" in header else None
    fields_col = next((i for i, h in enumerate(header) if h.startswith("Fields")), None)
    if fields_col is None and not {"#", "Field", "Type"} <= set(header):
        raise SpecParseError(f"{source}:{block.lineno}: unknown table header {header}")
    previous = current
    for offset, row in enumerate(block.lines[2:], start=2):
        where = f"{source}:{block.lineno + offset}"
        cells = _cells(row)
        name = cells[msg_col].strip("`") if msg_col is not None and cells[msg_col] else previous
        if name is None:
            raise SpecParseError(f"{where}: field table row without a message name")
        previous = name
        message = messages.setdefault(name, SpecMessage(name))
        if fields_col is not None:
            cell = cells[fields_col]
            for sf in _inline_fields(cell, where):
                if sf.type is None and bare.get(sf.number, ("", None))[0] == sf.name:
                    sf.type = bare[sf.number][1]
                message.fields.append(sf)
            for m in _BARE_NUMBER.finditer(cell):
                num = int(m.group(1))
                if num not in bare:
                    raise SpecParseError(f"{where}: bare field number {num} is not introduced")
                message.fields.append(SpecField(bare[num][0], num, bare[num][1], where))
            continue
        num_cell = cells[header.index("#")]
        name_cell = cells[header.index("Field")]
        field_name = re.fullmatch(r"`(\w+)`", name_cell)
        if field_name is None:
            if not num_cell.isdigit():
                raise SpecParseError(f"{where}: cannot read row {row!r}")
            message.unused.add(int(num_cell))
            continue
        type_, sub = parse_type(cells[header.index("Type")], where)
        message.fields.append(SpecField(field_name.group(1), int(num_cell), type_, where, sub))


# --- comparison -------------------------------------------------------------


def _all_types(file: FileDescriptor) -> dict[str, Descriptor | EnumDescriptor]:
    """Every message and enum visible from `file` (its own and its dependencies'), by full name."""
    out: dict[str, Descriptor | EnumDescriptor] = {}

    def add_message(desc: Descriptor) -> None:
        out[desc.full_name] = desc
        for enum in desc.enum_types:
            out[enum.full_name] = enum
        for nested in desc.nested_types:
            add_message(nested)

    seen: set[str] = set()

    def add_file(fd: FileDescriptor) -> None:
        if fd.name in seen:
            return
        seen.add(fd.name)
        for enum in fd.enum_types_by_name.values():
            out[enum.full_name] = enum
        for message in fd.message_types_by_name.values():
            add_message(message)
        for dep in fd.dependencies:
            add_file(dep)

    add_file(file)
    return out


def resolve(
    name: str, scope: str, types: dict[str, Descriptor | EnumDescriptor]
) -> Descriptor | EnumDescriptor | None:
    """Resolve `name` from within message `scope` (a full name), like protoc, then by suffix."""
    parts = scope.split(".")
    while parts:
        candidate = ".".join([*parts, name])
        if candidate in types:
            return types[candidate]
        parts.pop()
    if name in types:
        return types[name]
    matches = [t for full, t in types.items() if full.endswith("." + name)]
    return matches[0] if len(matches) == 1 else None


def _message_of(fd: FieldDescriptor) -> Descriptor | None:
    return fd.message_type if fd.type == FieldDescriptor.TYPE_MESSAGE else None


def _enum_of(fd: FieldDescriptor) -> EnumDescriptor | None:
    return fd.enum_type if fd.type == FieldDescriptor.TYPE_ENUM else None


def _map_entry(fd: FieldDescriptor) -> Descriptor | None:
    message = _message_of(fd)
    return message if message is not None and message.GetOptions().map_entry else None


def describe(fd: FieldDescriptor) -> str:
    """Our field's type, written the way the spec writes types."""
    entry = _map_entry(fd)
    if entry is not None:
        key, value = entry.fields_by_number[1], entry.fields_by_number[2]
        return f"map<{describe(key)}, {describe(value)}>"
    named = _message_of(fd) or _enum_of(fd)
    base = named.full_name if named is not None else _SCALAR_NAMES.get(fd.type, f"#{fd.type}")
    return f"repeated {base}" if fd.is_repeated else base


def _element_matches(
    spec_name: str, fd: FieldDescriptor, scope: str, types: dict[str, Descriptor | EnumDescriptor]
) -> bool | None:
    """Whether the element type of `fd` is `spec_name`; None if the name can't be resolved."""
    if spec_name in SCALARS:
        return fd.type == SCALARS[spec_name]
    target = resolve(spec_name, scope, types)
    if target is None:
        return None
    named = _message_of(fd) or _enum_of(fd)
    return named is not None and named.full_name == target.full_name


def _type_problem(
    spec: SpecType, fd: FieldDescriptor, scope: str, types: dict[str, Descriptor | EnumDescriptor]
) -> str | None:
    entry = _map_entry(fd)
    if spec.name == "map":
        if entry is None:
            return "mismatch"
        results = [
            _element_matches(spec.key, entry.fields_by_number[1], entry.full_name, types),
            _element_matches(spec.value, entry.fields_by_number[2], scope, types),
        ]
    else:
        if entry is not None or fd.is_repeated != spec.repeated:
            return "mismatch"
        results = [_element_matches(spec.name, fd, scope, types)]
    if None in results:
        return "unresolved"
    return None if all(results) else "mismatch"


def compare_message(
    spec: SpecMessage, desc: Descriptor | None, types: dict[str, Descriptor | EnumDescriptor]
) -> list[str]:
    """Differences between one spec message and our descriptor of it."""
    if desc is None:
        return [f"{spec.name}: message missing"]
    problems: list[str] = []
    problems += _compare_fields(spec.name, spec.fields, desc, types)
    proto = descriptor_pb2.DescriptorProto()
    desc.CopyToProto(proto)
    ours_reserved = {n for r in proto.reserved_range for n in range(r.start, r.end)}
    for number in sorted(spec.reserved - ours_reserved):
        problems.append(f"{spec.name}: number {number} is reserved in the table but not in ours")
    for number in sorted(spec.unused):
        if number in desc.fields_by_number:
            name = desc.fields_by_number[number].name
            problems.append(
                f"{spec.name}: number {number} is unused in the table but ours declares "
                f"{spec.name}.{name}"
            )
    listed = {f.name for f in spec.fields}
    for fd in desc.fields:
        if fd.name not in listed:
            problems.append(
                f"{spec.name}.{fd.name}: field not in the table (ours: {fd.number} {describe(fd)})"
            )
    return problems


def _compare_fields(
    owner: str,
    fields: list[SpecField],
    desc: Descriptor,
    types: dict[str, Descriptor | EnumDescriptor],
) -> list[str]:
    problems: list[str] = []
    for sf in fields:
        label = f"{owner}.{sf.name}"
        fd = desc.fields_by_name.get(sf.name)
        spec_type = sf.type
        if spec_type is None and sf.name in CONVENTIONAL_TYPES:
            spec_type = SpecType(CONVENTIONAL_TYPES[sf.name])
        shown = f"{sf.number} {spec_type}" if spec_type else f"{sf.number}"
        if fd is None:
            problems.append(f"{label}: field missing (spec: {shown}, {sf.where})")
            continue
        if fd.number != sf.number:
            problems.append(
                f"{label}: number mismatch: table says {sf.number}, ours is {fd.number} "
                f"({sf.where})"
            )
        if spec_type is not None:
            problem = _type_problem(spec_type, fd, desc.full_name, types)
            if problem == "unresolved":
                problems.append(f"{label}: spec type {spec_type} names no known type ({sf.where})")
            elif problem:
                problems.append(
                    f"{label}: type mismatch: table says {spec_type}, ours is {describe(fd)} "
                    f"({sf.where})"
                )
        nested = _message_of(fd)
        if sf.subfields and nested is None:
            problems.append(f"{label}: spec lists nested fields but ours is {describe(fd)}")
        elif sf.subfields and nested is not None:
            problems += _compare_fields(nested.name, sf.subfields, nested, types)
    return problems


def compare_enum(spec: SpecEnum, desc: EnumDescriptor | None) -> list[str]:
    """Differences between one spec enum and our descriptor of it."""
    if desc is None:
        return [f"{spec.name}: enum missing"]
    problems = []
    for name, number in spec.values.items():
        ours = desc.values_by_name.get(name)
        if ours is None:
            problems.append(f"{spec.name}.{name}: enum value missing (spec: {number})")
        elif ours.number != number:
            problems.append(
                f"{spec.name}.{name}: number mismatch: table says {number}, ours is {ours.number}"
            )
    for value in desc.values:
        if value.name not in spec.values:
            problems.append(
                f"{spec.name}.{value.name}: enum value not in the table (ours: {value.number})"
            )
    return problems


def compare_section(
    file: FileDescriptor,
    messages: dict[str, SpecMessage],
    enums: dict[str, SpecEnum],
) -> list[str]:
    """Every difference between the spec's messages and enums and those of `file`."""
    types = _all_types(file)
    problems: list[str] = []
    for name, spec_enum in enums.items():
        found = types.get(f"{file.package}.{name}")
        enum = found if isinstance(found, EnumDescriptor) else None
        problems += compare_enum(spec_enum, enum)
    for name, spec_message in messages.items():
        found = types.get(f"{file.package}.{name}")
        message = found if isinstance(found, Descriptor) else None
        problems += compare_message(spec_message, message, types)
    return problems
