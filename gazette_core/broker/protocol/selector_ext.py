"""LabelSelectors: matching, meta-label rewriting, validation and the string grammar.

The grammar is the one gazctl's `-l` flag accepts (`a=b, c in (d, e), !f`).
Every position tolerates at most one space, as Go's parser does, so a
selector that parses here parses there too. Import these through `labels_ext`.
"""

from __future__ import annotations

import itertools
from typing import NoReturn

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.labelset_ext import (
    MAX_NAME_LEN,
    MAX_VALUE_LEN,
    META_NAME,
    META_PREFIX,
    MIN_NAME_LEN,
    join_path,
    label_set_from,
    validate_label_set,
)
from gazette_core.broker.protocol.names_ext import (
    PATH_SYMBOLS,
    TOKEN_SYMBOLS,
    is_allowed_char,
    quote,
)
from gazette_core.errors import ValidationError


def validate_selector(sel: pb.LabelSelector, path: str) -> None:
    """Include and exclude are valid LabelSets, prefix labels allowed."""
    validate_label_set(sel.include, True, join_path(path, "include"))
    validate_label_set(sel.exclude, True, join_path(path, "exclude"))


def _values_by_name(labels: pb.LabelSet) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for label in labels.labels:
        out.setdefault(label.name, []).append(label.value)
    return out


def _label_matches(sel: pb.Label, values: list[str]) -> bool:
    # An empty selector value is an existence test.
    if not sel.value:
        return bool(values)
    if sel.prefix:
        return any(v.startswith(sel.value) for v in values)
    return sel.value in values


def matches(selector: pb.LabelSelector, labels: pb.LabelSet) -> bool:
    """No exclude label matches, and every include name has a matching value."""
    values = _values_by_name(labels)
    if any(_label_matches(sel, values.get(sel.name, [])) for sel in selector.exclude.labels):
        return False
    wanted: dict[str, list[pb.Label]] = {}
    for sel in selector.include.labels:
        wanted.setdefault(sel.name, []).append(sel)
    return all(
        any(_label_matches(sel, values.get(name, [])) for sel in group)
        for name, group in wanted.items()
    )


def with_meta_name(labels: pb.LabelSet, journal_name: str) -> pb.LabelSet:
    """`labels` plus the `name` meta-label, as selectors see a journal."""
    kept = [label for label in labels.labels if label.name != META_NAME]
    return label_set_from([*kept, pb.Label(name=META_NAME, value=journal_name)])


def _rewrite_prefix(ls: pb.LabelSet) -> pb.LabelSet:
    return label_set_from(
        pb.Label(name=META_NAME, value=label.value, prefix=True)
        if label.name == META_PREFIX
        else label
        for label in ls.labels
    )


def rewrite_prefix_meta(selector: pb.LabelSelector) -> pb.LabelSelector:
    """Turn each `prefix=X` label into a prefix match `name:prefix=X`."""
    return pb.LabelSelector(
        include=_rewrite_prefix(selector.include), exclude=_rewrite_prefix(selector.exclude)
    )


def _format_terms(ls: pb.LabelSet, exclude: bool) -> list[str]:
    terms = []
    for (name, prefix), group in itertools.groupby(ls.labels, lambda lb: (lb.name, lb.prefix)):
        key = name + (":prefix" if prefix else "")
        values = [label.value for label in group]
        if values == [""]:
            terms.append(("!" if exclude else "") + key)
        elif len(values) == 1:
            terms.append(f"{key}{'!=' if exclude else '='}{values[0]}")
        else:
            terms.append(f"{key} {'notin' if exclude else 'in'} ({','.join(values)})")
    return terms


def format_selector(sel: pb.LabelSelector) -> str:
    """Go's canonical selector string: include terms, then exclude terms."""
    return ",".join(_format_terms(sel.include, False) + _format_terms(sel.exclude, True))


class _Scanner:
    """A cursor over selector text that reports errors with their position."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def at_end(self) -> bool:
        return self.pos == len(self.text)

    def space(self) -> None:
        if self.text.startswith(" ", self.pos):
            self.pos += 1

    def take(self, literal: str) -> bool:
        if self.text.startswith(literal, self.pos):
            self.pos += len(literal)
            return True
        return False

    def take_keyword(self, word: str) -> bool:
        # A keyword must be followed by a space or the opening parenthesis.
        after = self.pos + len(word)
        if self.text.startswith(word, self.pos) and self.text[after : after + 1] in (" ", "("):
            self.pos = after
            return True
        return False

    def run(self, symbols: str) -> str:
        start = self.pos
        while self.pos < len(self.text) and is_allowed_char(self.text[self.pos], symbols):
            self.pos += 1
        return self.text[start : self.pos]

    def fail(self, problem: str, at: int | None = None) -> NoReturn:
        pos = self.pos if at is None else at
        rest = self.text[pos:]
        near = f"near {quote(rest)}" if rest else "at end"
        raise ValidationError(
            "selector", f"{problem} at position {pos} of {quote(self.text)} ({near})"
        )


def _name(sc: _Scanner) -> tuple[str, bool]:
    start = sc.pos
    name = sc.run(TOKEN_SYMBOLS)
    if not name:
        sc.fail("expected a label name")
    if not MIN_NAME_LEN <= len(name.encode("utf-8")) <= MAX_NAME_LEN:
        sc.fail(f"label name {quote(name)} must be {MIN_NAME_LEN}-{MAX_NAME_LEN} bytes", start)
    prefix = sc.text.startswith(":", sc.pos)
    if prefix and not sc.take(":prefix"):
        sc.fail('expected ":prefix"')
    return name, prefix


def _value(sc: _Scanner) -> str:
    start = sc.pos
    value = sc.run(PATH_SYMBOLS)
    if len(value.encode("utf-8")) > MAX_VALUE_LEN:
        sc.fail(f"label value must be at most {MAX_VALUE_LEN} bytes", start)
    return value


def _value_set(sc: _Scanner) -> list[str]:
    if not sc.take("("):
        sc.fail('expected "("')
    values = []
    while True:
        sc.space()
        value = _value(sc)
        if not value:
            # `k in ()` or `k in (a,)` would silently mean "k exists"; refuse it.
            sc.fail("expected a label value in value set")
        values.append(value)
        sc.space()
        if sc.take(")"):
            return values
        if not sc.take(","):
            sc.fail('expected "," or ")" in value set')


def _expression(sc: _Scanner, include: list[pb.Label], exclude: list[pb.Label]) -> None:
    sc.space()
    negated = sc.take("!")
    name, prefix = _name(sc)
    if negated:
        exclude.append(pb.Label(name=name, prefix=prefix))
        return
    mark = sc.pos
    sc.space()
    target, values = include, [""]
    if sc.take("==") or sc.take("="):
        sc.space()
        values = [_value(sc)]
    elif sc.take("!="):
        sc.space()
        target, values = exclude, [_value(sc)]
    elif sc.pos > mark and sc.take_keyword("in"):
        sc.space()
        values = _value_set(sc)
    elif sc.pos > mark and (sc.take_keyword("notin") or sc.take_keyword("not in")):
        sc.space()
        target, values = exclude, _value_set(sc)
    else:
        sc.pos = mark  # A bare `k`: leave the space for the separator.
    target.extend(pb.Label(name=name, value=v, prefix=prefix) for v in values)


def parse_selector(text: str) -> pb.LabelSelector:
    """Parse a selector string into a validated LabelSelector ("" selects everything)."""
    include: list[pb.Label] = []
    exclude: list[pb.Label] = []
    sc = _Scanner(text)
    while text:
        _expression(sc, include, exclude)
        sc.space()
        if sc.at_end():
            break
        if not sc.take(","):
            sc.fail('expected "," or end of selector')
    selector = pb.LabelSelector(include=label_set_from(include), exclude=label_set_from(exclude))
    try:
        validate_selector(selector, "")
    except ValidationError as exc:
        raise ValidationError("selector", f"{quote(text)}: {exc}") from None
    return selector
