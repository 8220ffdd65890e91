"""The Prometheus text exposition of every registered metric, as Go's promhttp serves it.

prometheus_client's own writer names a counter's TYPE line after the
counter plus `_total`, which would misname the families of `families.py`
that Go names without it (`gazette_sequencer_queued`); those are written
here under their exact names, and everything else by prometheus_client.
"""

from __future__ import annotations

from prometheus_client import REGISTRY, disable_created_metrics, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.utils import floatToGoString

from gazette_core.metrics.families import ExactMetric

# The classic text format, which every Prometheus understands (and Go's promhttp serves).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Go exposes no `_created` series; neither do we.
disable_created_metrics()


class _One:
    """A collector of one already-collected metric, for prometheus_client's writer."""

    def __init__(self, metric: Metric) -> None:
        self.metric = metric

    def collect(self) -> list[Metric]:
        return [self.metric]


def exposition() -> tuple[bytes, str]:
    """The text exposition of every registered metric, and its content type."""
    parts = [family_text(m) if isinstance(m, ExactMetric) else generate_latest(_One(m))
             for m in REGISTRY.collect()]
    return b"".join(parts), CONTENT_TYPE


def family_text(metric: Metric) -> bytes:
    """HELP, TYPE and sample lines of a family, every name written as it is."""
    lines = [f"# HELP {metric.name} {_escape_help(metric.documentation)}\n",
             f"# TYPE {metric.name} {metric.type}\n"]
    for sample in metric.samples:
        labels = ",".join(f'{k}="{_escape_value(v)}"' for k, v in sample.labels.items())
        lines.append(f"{sample.name}{{{labels}}} {floatToGoString(sample.value)}\n" if labels
                     else f"{sample.name} {floatToGoString(sample.value)}\n")
    return "".join(lines).encode()


def _escape_help(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n")


def _escape_value(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
