"""Path postfixes from `path_postfix_template`: the part of Go text/template specs use.

Gazette evaluates the template with `{Spool, JournalSpec}` when it persists a
fragment (docs/design/fragments.md#names-in-stores), and the result becomes the fragment's path
postfix, e.g. Hive-style partitions (one line in a spec):

    date={{ .Spool.FirstAppendTime.Format "2006-01-02" }}/
    hour={{ .Spool.FirstAppendTime.Format "15" }}

Supported: literal text, `{{/* comments */}}`, `{{-`/`-}}` whitespace trimming,
and actions that are one field chain from the root, optionally ending in a
method call with string or integer arguments. Fields: `.Spool` (the
fragment's `Journal`, `Begin`, `End`, `CompressionCodec`, also as
`.Spool.Fragment.*`; `FirstAppendTime` in UTC; `Registers`) and `.JournalSpec`
(`Name`, `Replication`, `Flags`, `MaxAppendRate`, `Fragment.Length`,
`Fragment.CompressionCodec`, `Fragment.PathPostfixTemplate`). Methods: a time's
`Format` (Go reference-time layouts), `Year`, `Month`, `Day`, `Hour`,
`Minute`, `Second`, `YearDay`, `Unix`, `UTC`; a label set's `ValueOf`, also
promoted to `.JournalSpec`. Pipelines, variables and functions such as
`printf` are outside the subset and fail with a ValidationError naming them.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.errors import ValidationError, shown, truncated

if TYPE_CHECKING:
    from gazette_core.broker.fragment.spool import Spool

WHERE = "path_postfix_template"
# One argument of a method call: a quoted or raw string, or an integer.
_ARG = re.compile(r'"(?:[^"\\]|\\.)*"|`[^`]*`|-?\d+')
_CHAIN = re.compile(r"(?:\.[A-Za-z]\w*)+")
_SPACE = " \t\r\n"  # What Go trims beside `{{-` and `-}}`, and needs after/before the dash.
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


@dataclass(frozen=True, slots=True)
class _Action:
    chain: tuple[str, ...]  # ("Spool", "FirstAppendTime", "Format")
    args: tuple[str | int, ...]
    source: str


Parsed = tuple[str | _Action, ...]


# The first append time of the sample spool `sample` evaluates templates with.
SAMPLE_TIME = datetime(2006, 1, 2, 15, 4, 5, 999_999, tzinfo=UTC)


def evaluate(template: str, spool: Spool, spec: pb.JournalSpec) -> str:
    """The path postfix `template` gives for `spool` of the journal `spec`."""
    first = spool.first_append_time
    when = datetime.fromtimestamp(first, UTC) if first is not None else None
    return _evaluate(template, _spool_view(spool.fragment, when, spool.registers), spec)


def sample(spec: pb.JournalSpec) -> str:
    """The path postfix of `spec`'s template for a sample spool of the journal.

    Validation runs this so that a template the persister cannot evaluate is
    refused when applied, not found out when each spool fails to persist.
    """
    if not spec.fragment.path_postfix_template:
        return ""  # The common case, on every spec decoded from Etcd.
    fragment = pb.Fragment(journal=spec.name, begin=0, end=0,
                           compression_codec=spec.fragment.compression_codec)
    return _evaluate(spec.fragment.path_postfix_template,
                     _spool_view(fragment, SAMPLE_TIME, pb.LabelSet()), spec)


def _evaluate(template: str, spool: dict[str, Any], spec: pb.JournalSpec) -> str:
    if not template:
        return ""
    root = {"Spool": spool, "JournalSpec": _spec_view(spec)}
    out = []
    for part in parse(template):
        out.append(part if isinstance(part, str) else _print(_run(part, root), part))
    return "".join(out)


@functools.lru_cache(maxsize=256)
def parse(template: str) -> Parsed:
    """Split `template` into literal text and actions; ValidationError if outside the subset."""
    parts: list[str | _Action] = []
    pos, trim_next = 0, False
    while (start := template.find("{{", pos)) != -1:
        end = template.find("}}", start + 2)
        if end == -1:
            raise ValidationError(WHERE, f'unclosed "{{{{" at index {start} of {shown(template)}')
        body = template[start + 2:end]
        text = template[pos:start]
        trim_left = body[:1] == "-" and body[1:2] in tuple(_SPACE)
        trim_right = body[-1:] == "-" and body[-2:-1] in tuple(_SPACE)
        body = body[2 if trim_left else 0:len(body) - 2 if trim_right else None]
        parts.append(_trimmed(text, trim_next, trim_left))
        if not body.strip().startswith("/*"):
            parts.append(_parse_action(body.strip(), template))
        pos, trim_next = end + 2, trim_right
    parts.append(_trimmed(template[pos:], trim_next, False))
    return tuple(p for p in parts if p != "")


def _trimmed(text: str, left: bool, right: bool) -> str:
    text = text.lstrip(_SPACE) if left else text
    return text.rstrip(_SPACE) if right else text


def _parse_action(body: str, template: str) -> _Action:
    chain = _CHAIN.match(body)
    if chain is None:
        raise ValidationError(WHERE, f"unsupported action {{{{ {truncated(body)} }}}} in "
                                     f"{shown(template)}: only field chains like "
                                     ".Spool.FirstAppendTime.Format")
    args: list[str | int] = []
    rest = body[chain.end():]
    while rest.strip():
        if not rest[0].isspace() or (arg := _ARG.match(rest.lstrip())) is None:
            raise ValidationError(WHERE, f"unsupported argument {shown(rest.strip())} in "
                                         f"{{{{ {truncated(body)} }}}} of {shown(template)}")
        text = arg.group()
        args.append(int(text) if text[0] not in "\"`" else
                    text[1:-1] if text[0] == "`" else ast.literal_eval(text))
        rest = rest.lstrip()[arg.end():]
    return _Action(tuple(chain.group()[1:].split(".")), tuple(args), body)


def _run(action: _Action, root: dict[str, Any]) -> Any:
    value: Any = root
    for i, name in enumerate(action.chain):
        last = i == len(action.chain) - 1
        value = _step(value, name, action.args if last else (), action)
    return value


def _step(value: Any, name: str, args: tuple[str | int, ...], action: _Action) -> Any:
    if isinstance(value, dict) and name in value:
        if args:
            raise ValidationError(WHERE, f"{{{{ {action.source} }}}}: {name} is a field, "
                                         "not a method: it takes no arguments")
        return value[name]
    methods = _METHODS.get(type(value), {}) if not isinstance(value, dict) else \
        value.get("__methods__", {})
    method = methods.get(name)
    if method is None:
        raise ValidationError(WHERE, f"{{{{ {action.source} }}}}: can't evaluate field {name}")
    try:
        return method(value, *args)
    except TypeError as exc:
        raise ValidationError(WHERE, f"{{{{ {action.source} }}}}: wrong arguments for {name}: "
                                     f"{exc}") from exc


def _print(value: Any, action: _Action) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int):
        return str(value)
    if isinstance(value, datetime):
        return go_format(value, "2006-01-02 15:04:05.999999999 -0700 MST")
    raise ValidationError(WHERE, f"{{{{ {action.source} }}}}: cannot print a "
                                 f"{type(value).__name__}")


@dataclass(frozen=True, slots=True)
class _Labels:
    labels: pb.LabelSet

    def value_of(self, name: str) -> str:
        """Go's LabelSet.ValueOf: the first value of `name`, or ""."""
        return next((label.value for label in self.labels.labels if label.name == name), "")


def _fragment_view(f: pb.Fragment) -> dict[str, Any]:
    return {"Journal": f.journal, "Begin": f.begin, "End": f.end,
            "CompressionCodec": pb.CompressionCodec.Name(f.compression_codec),
            "BackingStore": f.backing_store, "ModTime": f.mod_time}


def _spool_view(fragment: pb.Fragment, first_append_time: datetime | None,
                registers: pb.LabelSet) -> dict[str, Any]:
    view = _fragment_view(fragment)
    view["Fragment"] = dict(view)
    view["FirstAppendTime"] = first_append_time or datetime(1, 1, 1, tzinfo=UTC)  # Go's zero
    view["Registers"] = _Labels(registers)
    return view


def _spec_view(spec: pb.JournalSpec) -> dict[str, Any]:
    labels = _Labels(spec.labels)
    return {"Name": spec.name, "Replication": spec.replication, "Flags": spec.flags,
            "MaxAppendRate": spec.max_append_rate, "LabelSet": labels,
            "Fragment": {"Length": spec.fragment.length,
                         "CompressionCodec": pb.CompressionCodec.Name(
                             spec.fragment.compression_codec),
                         "PathPostfixTemplate": spec.fragment.path_postfix_template},
            "__methods__": {"ValueOf": lambda _spec, name: labels.value_of(name)}}


_METHODS: dict[type, dict[str, Callable[..., Any]]] = {
    datetime: {
        "Format": lambda t, layout: go_format(t, layout),
        "Year": lambda t: t.year, "Month": lambda t: MONTHS[t.month - 1], "Day": lambda t: t.day,
        "Hour": lambda t: t.hour, "Minute": lambda t: t.minute, "Second": lambda t: t.second,
        "YearDay": lambda t: t.timetuple().tm_yday, "Unix": lambda t: int(t.timestamp()),
        "UTC": lambda t: t,
    },
    _Labels: {"ValueOf": lambda labels, name: labels.value_of(name)},
}

# Go reference-time layout elements, longest first where one prefixes another.
_LAYOUT = re.compile(
    r"January|Jan|Monday|Mon|MST|_2006|2006|002|__2|_2|15|01|02|03|04|05|06|PM|pm"
    r"|Z07:00:00|Z070000|Z07:00|Z0700|Z07|-07:00:00|-070000|-07:00|-0700|-07"
    r"|[.,](?:0+|9+)(?!\d)|1|2|3|4|5")


def go_format(t: datetime, layout: str) -> str:
    """`t` (UTC) formatted like Go's `time.Time.Format(layout)`."""
    return _LAYOUT.sub(lambda m: _element(t, m.group()), layout)


def _element(t: datetime, e: str) -> str:
    simple = {
        "January": MONTHS[t.month - 1], "Jan": MONTHS[t.month - 1][:3],
        "Monday": DAYS[t.weekday()], "Mon": DAYS[t.weekday()][:3], "MST": "UTC",
        "2006": f"{t.year:04d}", "_2006": f"_{t.year:04d}",
        "002": f"{t.timetuple().tm_yday:03d}", "__2": f"{t.timetuple().tm_yday:>3d}",
        "_2": f"{t.day:>2d}", "15": f"{t.hour:02d}", "01": f"{t.month:02d}",
        "02": f"{t.day:02d}", "03": f"{(t.hour % 12) or 12:02d}", "04": f"{t.minute:02d}",
        "05": f"{t.second:02d}", "06": f"{t.year % 100:02d}",
        "PM": "PM" if t.hour >= 12 else "AM", "pm": "pm" if t.hour >= 12 else "am",
        "1": str(t.month), "2": str(t.day), "3": str((t.hour % 12) or 12),
        "4": str(t.minute), "5": str(t.second),
    }
    if e in simple:
        return simple[e]
    if e[0] == "Z":
        return "Z"  # Times here are UTC, which Z layouts print as "Z".
    if e[0] == "-":
        return "+00" + e[3:]  # A zero offset: "-07:00" gives "+00:00", "-0700" "+0000".
    return _fraction(t, e)


def _fraction(t: datetime, e: str) -> str:
    """`.000` (fixed digits) or `.999` (trailing zeros dropped) fractional seconds."""
    digits = f"{t.microsecond:06d}000"[:len(e) - 1]
    if e[1] == "9":
        digits = digits.rstrip("0")
        return e[0] + digits if digits else ""
    return e[0] + digits
