"""LabelSets, register operations, selector matching and the selector grammar."""

from __future__ import annotations

import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.labels_ext import (
    format_selector,
    label_set,
    label_set_from,
    matches,
    parse_selector,
    rewrite_prefix_meta,
    subtract_label_sets,
    union_label_sets,
    validate_label,
    validate_label_set,
    validate_selector,
    values_of,
    with_meta_name,
)
from gazette_core.errors import ValidationError


def L(name: str, value: str = "", prefix: bool = False) -> pb.Label:
    return pb.Label(name=name, value=value, prefix=prefix)


def selector(include: list[pb.Label], exclude: list[pb.Label] | None = None) -> pb.LabelSelector:
    return pb.LabelSelector(
        include=pb.LabelSet(labels=include), exclude=pb.LabelSet(labels=exclude)
    )


def test_label_set_sorts_and_deduplicates() -> None:
    assert label_set(("bb", "2"), ("aa", "x"), ("bb", "1"), ("aa", "x")) == pb.LabelSet(
        labels=[L("aa", "x"), L("bb", "1"), L("bb", "2")]
    )
    assert label_set() == pb.LabelSet()
    assert label_set_from([L("zz", "1", True), L("aa")]) == pb.LabelSet(
        labels=[L("aa"), L("zz", "1", True)]
    )


def test_values_of() -> None:
    ls = label_set(("aa", "1"), ("bb", "2"), ("aa", "3"))
    assert values_of(ls, "aa") == ["1", "3"]
    assert values_of(ls, "cc") == []


def test_validate_label_accepts_prefix_only_when_allowed() -> None:
    validate_label(L("name", "a/", True), True, "include.labels[0]")
    with pytest.raises(ValidationError) as info:
        validate_label(L("name", "a/", True), False, "labels.labels[0]")
    assert str(info.value) == (
        'labels.labels[0].prefix: prefix match of label "name" is only allowed in a selector'
    )


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        (
            [L("a", "x")],
            'labels.labels[0].name: invalid length of "a": expected 2 <= length <= 64 bytes '
            "(got 1)",
        ),
        (
            [L("aa", "x y")],
            'labels.labels[0].value: invalid character " " at index 1 of "x y" '
            "(allowed: letters, numbers and -_+/.=%)",
        ),
        (
            [L("aa", "v" * 1025)],
            f'labels.labels[0].value: invalid length of "{"v" * 100}"... (1025 bytes): '
            "expected 0 <= length <= 1024 bytes (got 1025)",
        ),
        (
            [L("bb"), L("aa")],
            "labels.labels[1]: labels must be unique and sorted by (name, value): "
            '"bb=" is not before "aa="',
        ),
        (
            [L("aa", "1"), L("aa", "1")],
            "labels.labels[1]: labels must be unique and sorted by (name, value): "
            '"aa=1" is not before "aa=1"',
        ),
        (
            [L("aa", ""), L("aa", "1")],
            'labels.labels[1]: label "aa" has both empty and non-empty values',
        ),
    ],
)
def test_validate_label_set_errors(labels: list[pb.Label], message: str) -> None:
    with pytest.raises(ValidationError) as info:
        validate_label_set(pb.LabelSet(labels=labels), False, "labels")
    assert str(info.value) == message


def test_validate_selector_paths() -> None:
    validate_selector(selector([L("name", "a/", True)], [L("aa")]), "selector")
    with pytest.raises(ValidationError) as info:
        validate_selector(selector([], [L("aa", "2"), L("aa", "1")]), "selector")
    assert str(info.value) == (
        "selector.exclude.labels[1]: labels must be unique and sorted by (name, value): "
        '"aa=2" is not before "aa=1"'
    )


def test_union_replaces_values_per_name() -> None:
    current = label_set(("aa", "1"), ("aa", "2"), ("bb", "x"))
    union = label_set(("aa", "3"), ("cc", "y"))
    assert union_label_sets(current, union) == label_set(("aa", "3"), ("bb", "x"), ("cc", "y"))
    assert union_label_sets(current, pb.LabelSet()) == current
    assert union_label_sets(pb.LabelSet(), union) == union


def test_subtract_removes_only_exact_value_lists() -> None:
    current = label_set(("aa", "1"), ("aa", "2"), ("bb", "x"), ("cc", "y"))
    subtract = label_set(("aa", "1"), ("bb", "x"), ("cc", "z"), ("dd", "w"))
    # `aa` keeps its values: ["1"] is not the full list ["1", "2"].
    assert subtract_label_sets(current, subtract) == label_set(
        ("aa", "1"), ("aa", "2"), ("cc", "y")
    )
    assert subtract_label_sets(current, label_set(("aa", "1"), ("aa", "2"))) == label_set(
        ("bb", "x"), ("cc", "y")
    )


JOURNAL_LABELS = label_set(("app", "web"), ("region", "us-east-1"), ("tier", "a"), ("tier", "b"))


@pytest.mark.parametrize(
    ("sel", "expect"),
    [
        (selector([]), True),
        (selector([L("app", "web")]), True),
        (selector([L("app", "api")]), False),
        (selector([L("app")]), True),
        (selector([L("missing")]), False),
        (selector([L("app", "api"), L("app", "web")]), True),
        (selector([L("app", "web"), L("tier", "c")]), False),
        (selector([L("app", "web"), L("tier", "b")]), True),
        (selector([L("region", "us-", True)]), True),
        (selector([L("region", "eu-", True)]), False),
        (selector([L("region", "", True)]), True),
        (selector([], [L("app", "api")]), True),
        (selector([], [L("app", "web")]), False),
        (selector([], [L("tier")]), False),
        (selector([], [L("missing")]), True),
        (selector([], [L("region", "us-", True)]), False),
        (selector([L("app", "web")], [L("tier", "b")]), False),
    ],
)
def test_matches(sel: pb.LabelSelector, expect: bool) -> None:
    assert matches(sel, JOURNAL_LABELS) is expect


def test_with_meta_name_and_prefix_rewrite() -> None:
    labels = with_meta_name(label_set(("app", "web"), ("zz", "1")), "a/b/journal")
    assert labels == label_set(("app", "web"), ("name", "a/b/journal"), ("zz", "1"))
    rewritten = rewrite_prefix_meta(
        selector([L("app", "web"), L("prefix", "a/")], [L("prefix", "a/c/")])
    )
    assert rewritten == selector(
        [L("app", "web"), L("name", "a/", True)], [L("name", "a/c/", True)]
    )
    assert matches(rewritten, with_meta_name(pb.LabelSet(labels=[L("app", "web")]), "a/b/c"))
    assert not matches(rewritten, with_meta_name(pb.LabelSet(labels=[L("app", "web")]), "a/c/d"))


@pytest.mark.parametrize(
    ("text", "expect", "canonical"),
    [
        ("", selector([]), ""),
        (
            "aa=bb, cc in (dd, ee), !ff",
            selector([L("aa", "bb"), L("cc", "dd"), L("cc", "ee")], [L("ff")]),
            "aa=bb,cc in (dd,ee),!ff",
        ),
        ("aa==bb", selector([L("aa", "bb")]), "aa=bb"),
        ("aa = bb", selector([L("aa", "bb")]), "aa=bb"),
        ("aa=", selector([L("aa")]), "aa"),
        ("aa", selector([L("aa")]), "aa"),
        (" aa ,bb", selector([L("aa"), L("bb")]), "aa,bb"),
        ("aa != bb", selector([], [L("aa", "bb")]), "aa!=bb"),
        ("!aa", selector([], [L("aa")]), "!aa"),
        ("aa in(x)", selector([L("aa", "x")]), "aa=x"),
        ("aa in ( x , y )", selector([L("aa", "x"), L("aa", "y")]), "aa in (x,y)"),
        ("aa notin (x,y)", selector([], [L("aa", "x"), L("aa", "y")]), "aa notin (x,y)"),
        ("aa not in (y, x)", selector([], [L("aa", "x"), L("aa", "y")]), "aa notin (x,y)"),
        ("name:prefix=a/b/", selector([L("name", "a/b/", True)]), "name:prefix=a/b/"),
        ("name:prefix!=a/", selector([], [L("name", "a/", True)]), "name:prefix!=a/"),
        (
            "name:prefix in (a/, b/)",
            selector([L("name", "a/", True), L("name", "b/", True)]),
            "name:prefix in (a/,b/)",
        ),
        ("!aa:prefix", selector([], [L("aa", "", True)]), "!aa:prefix"),
        ("aa=x=y%2", selector([L("aa", "x=y%2")]), "aa=x=y%2"),
        ("aa=1,aa=1", selector([L("aa", "1")]), "aa=1"),
        (
            "app.gazette.dev/message-type=Foo,\u00e9t\u00e9=\u00e9",
            selector([L("app.gazette.dev/message-type", "Foo"), L("\u00e9t\u00e9", "\u00e9")]),
            "app.gazette.dev/message-type=Foo,\u00e9t\u00e9=\u00e9",
        ),
        (
            "zz=1, !yy, name:prefix=a/, xx notin (2), ww",
            selector([L("name", "a/", True), L("ww"), L("zz", "1")], [L("xx", "2"), L("yy")]),
            "name:prefix=a/,ww,zz=1,xx!=2,!yy",
        ),
    ],
)
def test_parse_and_format_selector(text: str, expect: pb.LabelSelector, canonical: str) -> None:
    parsed = parse_selector(text)
    assert parsed == expect
    assert format_selector(parsed) == canonical
    assert parse_selector(canonical) == expect


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (
            "a=b, c in (d, e), !f",
            'label name "a" must be 2-64 bytes at position 0 of "a=b, c in (d, e), !f" '
            '(near "a=b, c in (d, e), !f")',
        ),
        (
            "aa=bb,",
            'expected a label name at position 6 of "aa=bb," (at end)',
        ),
        (
            ",aa",
            'expected a label name at position 0 of ",aa" (near ",aa")',
        ),
        (
            "aa  =bb",
            'expected "," or end of selector at position 3 of "aa  =bb" (near " =bb")',
        ),
        (
            "aa=bb  ,cc",
            'expected "," or end of selector at position 6 of "aa=bb  ,cc" (near " ,cc")',
        ),
        (
            "aa=b c",
            'expected "," or end of selector at position 5 of "aa=b c" (near "c")',
        ),
        (
            "aa in (x,  y)",
            'expected a label value in value set at position 10 of "aa in (x,  y)" (near " y)")',
        ),
        (
            "aa in ()",
            'expected a label value in value set at position 7 of "aa in ()" (near ")")',
        ),
        (
            "aa in (x",
            'expected "," or ")" in value set at position 8 of "aa in (x" (at end)',
        ),
        (
            "aa in x",
            'expected "(" at position 6 of "aa in x" (near "x")',
        ),
        (
            "aa:pre=x",
            'expected ":prefix" at position 2 of "aa:pre=x" (near ":pre=x")',
        ),
        (
            "!aa=b",
            'expected "," or end of selector at position 3 of "!aa=b" (near "=b")',
        ),
        (
            "aa=#",
            'expected "," or end of selector at position 3 of "aa=#" (near "#")',
        ),
        (
            "aa=1,aa",
            '"aa=1,aa": include.labels[1]: label "aa" has both empty and non-empty values',
        ),
        (
            "aa=1,aa:prefix=1",
            '"aa=1,aa:prefix=1": include.labels[1]: labels must be unique and sorted by '
            '(name, value): "aa=1" is not before "aa:prefix=1"',
        ),
        (
            f"{'n' * 65}=1",
            f'label name "{"n" * 65}" must be 2-64 bytes at position 0 of "{"n" * 65}=1" '
            f'(near "{"n" * 65}=1")',
        ),
        (
            f"aa={'v' * 1025}",
            f'label value must be at most 1024 bytes at position 3 of "aa={"v" * 97}"... '
            f'(1028 bytes) (near "{"v" * 100}"... (1025 bytes))',
        ),
    ],
)
def test_parse_selector_errors(text: str, reason: str) -> None:
    with pytest.raises(ValidationError) as info:
        parse_selector(text)
    assert str(info.value) == f"selector: {reason}"
