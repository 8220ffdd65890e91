"""Metric families and the text exposition: exact names, kinds, buckets and escaping."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
from prometheus_client import REGISTRY

from gazette_core.metrics.exposition import exposition
from gazette_core.metrics.families import Counter, Gauge, Histogram
from tests.metrics.scrape import Family, parse

_names = itertools.count()
Families = list[Counter | Histogram]


@pytest.fixture
def made() -> Iterator[Families]:
    """Families a test registers, unregistered after it."""
    families: Families = []
    yield families
    for family in families:
        REGISTRY.unregister(family)


def name(stem: str) -> str:
    return f"test_{stem}_{next(_names)}"


def scraped() -> dict[str, Family]:
    text, content_type = exposition()
    assert content_type == "text/plain; version=0.0.4; charset=utf-8"
    return parse(text.decode())


def test_a_counter_not_ending_in_total_is_typed_counter_under_its_own_name(
        made: Families) -> None:
    queued = Counter(name("queued"), "Sequenced.", ("journal", "outcome"))
    made.append(queued)
    queued.cell("a/j", "outsideCommit").value += 3

    family = scraped()[queued.name]
    assert (family.kind, family.help) == ("counter", "Sequenced.")
    assert family.samples == [(queued.name, {"journal": "a/j", "outcome": "outsideCommit"},
                               3.0)]


def test_an_unlabelled_family_shows_zero_at_once_a_labelled_one_only_once_used(
        made: Families) -> None:
    lone, labelled = Gauge(name("lone"), "One."), Counter(name("by_shard"), "Per shard.",
                                                          ("shard",))
    made.extend((lone, labelled))
    families = scraped()
    assert families[lone.name].samples == [(lone.name, {}, 0.0)]
    assert (families[labelled.name].kind, families[labelled.name].samples) == ("counter", [])

    labelled.cell("s-1").value += 1
    labelled.remove("s-1")
    labelled.remove("never-made")
    assert scraped()[labelled.name].samples == []


def test_a_series_made_beforehand_shows_once_shown(made: Families) -> None:
    calls = Counter(name("calls"), "Calls.", ("method",))
    made.append(calls)
    cell = calls.new_cell()
    cell.value += 2
    assert scraped()[calls.name].samples == []

    calls.show(cell, "Read")
    cell.value += 1
    assert scraped()[calls.name].samples == [(calls.name, {"method": "Read"}, 3.0)]


def test_histogram_buckets_are_cumulative_up_to_inf(made: Families) -> None:
    items = Histogram(name("items"), "Items listed.", ("store",), buckets=(10, 40, 160))
    made.append(items)
    cell = items.cell("file:///")
    for observed in (0, 10, 11, 40, 1000):
        cell.observe(observed)

    family = scraped()[items.name]
    assert family.kind == "histogram"
    assert [(n.removeprefix(items.name), labels.get("le"), v) for n, labels, v in
            family.samples] == [("_bucket", "10.0", 2.0), ("_bucket", "40.0", 4.0),
                                ("_bucket", "160.0", 4.0), ("_bucket", "+Inf", 5.0),
                                ("_sum", None, 1061.0), ("_count", None, 5.0)]


def test_label_values_and_help_are_escaped(made: Families) -> None:
    odd = Counter(name("odd"), 'Help with \\ and\nnewline.', ("journal",))
    made.append(odd)
    odd.cell('a"b\\c\nd').value += 1

    text = exposition()[0].decode()
    assert f"# HELP {odd.name} Help with \\\\ and\\nnewline.\n" in text
    assert f'{odd.name}{{journal="a\\"b\\\\c\\nd"}} 1.0\n' in text


def test_a_wrong_number_of_label_values_is_refused(made: Families) -> None:
    pair = Counter(name("pair"), "Two labels.", ("a", "b"))
    made.append(pair)
    with pytest.raises(ValueError) as raised:
        pair.cell("only-a")
    assert str(raised.value) == f"{pair.name} takes labels ('a', 'b'), not ('only-a',)"


def test_prometheus_clients_own_metrics_keep_their_exposition() -> None:
    families = scraped()
    assert families["process_cpu_seconds_total"].kind == "counter"
    assert families["python_info"].kind == "gauge"
