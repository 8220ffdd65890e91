"""Reading a Prometheus text exposition exactly as written, as Prometheus itself reads it.

prometheus_client's parser renames a counter's samples to end in `_total`,
which hides what a scraper sees for Go's names that do not (`..._totals`,
`gazette_sequencer_queued`); this one keeps every name as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import aiohttp

_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
Labels = tuple[tuple[str, str], ...]
Samples = dict[tuple[str, Labels], float]


@dataclass
class Family:
    name: str
    kind: str = ""
    help: str = ""
    samples: list[tuple[str, dict[str, str], float]] = field(default_factory=list)

    def label_names(self) -> set[tuple[str, ...]]:
        """The label name sets of its samples (`le` of histogram buckets left out)."""
        return {tuple(sorted(k for k in labels if k != "le")) for _, labels, _ in self.samples}


def parse(text: str) -> dict[str, Family]:
    """Families by name: HELP and TYPE lines, and the samples that follow them."""
    families: dict[str, Family] = {}
    current: Family | None = None
    for line in text.splitlines():
        if line.startswith(("# HELP ", "# TYPE ")):
            name, _, rest = line[7:].partition(" ")
            current = families.setdefault(name, Family(name))
            if line.startswith("# HELP "):
                current.help = rest
            else:
                current.kind = rest
        elif line and not line.startswith("#"):
            assert current is not None, f"a sample before any TYPE line: {line!r}"
            head, _, value = line.rpartition(" ")
            name, _, labels = head.partition("{")
            current.samples.append((name, dict(_LABEL.findall(labels)), float(value)))
    return families


def samples(families: dict[str, Family]) -> Samples:
    return {(name, tuple(sorted(labels.items()))): value
            for family in families.values() for name, labels, value in family.samples}


async def scrape(http: aiohttp.ClientSession, url: str) -> dict[str, Family]:
    """GET a /metrics URL as Prometheus would, and parse it."""
    async with http.get(url) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return parse(await resp.text())


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def delta(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)
