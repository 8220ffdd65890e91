"""An example's journals and shards, as specs from its journals.yaml and shards.yaml."""

from __future__ import annotations

from pathlib import Path

from gazette_core.broker.journalspace.pushdown import push_down
from gazette_core.broker.journalspace.yaml_io import load_tree
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.shardspace import load_set, to_apply_request
from gazette_core.consumer.shardspace import push_down as push_down_shards

HERE = Path(__file__).parent


def example_journals(example: str, replication: int | None = None) -> list[pb.JournalSpec]:
    """Every journal of `example` (e.g. "stream_sum"), recovery logs included."""
    text = (HERE / example / "journals.yaml").read_text()
    specs = [leaf.spec for leaf in push_down(load_tree(text))]
    for spec in specs:
        spec.replication = replication or spec.replication
    return specs


def example_shards(example: str) -> list[cpb.ShardSpec]:
    return load_shards((HERE / example / "shards.yaml").read_text())


def load_shards(text: str) -> list[cpb.ShardSpec]:
    """The shards of a shard set (`gazctl shards apply` YAML), pushed down and validated."""
    return [c.upsert for c in to_apply_request(push_down_shards(load_set(text))).changes]
