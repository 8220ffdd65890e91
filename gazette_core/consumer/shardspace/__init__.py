"""Shard YAML: the `common` + `shards` set `gazctl shards apply/list -o yaml` speaks.

Push-down gives every shard the values of `common` it leaves unset; hoist
moves what all listed shards agree on into `common`, so a listing applies
back unchanged.
"""

from gazette_core.consumer.shardspace.hoist import hoist
from gazette_core.consumer.shardspace.model import Entry, ShardSet
from gazette_core.consumer.shardspace.pushdown import push_down, to_apply_request
from gazette_core.consumer.shardspace.yaml_io import dump_set, load_set

__all__ = ["Entry", "ShardSet", "dump_set", "hoist", "load_set", "push_down",
           "to_apply_request"]
