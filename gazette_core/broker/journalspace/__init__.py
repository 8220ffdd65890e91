"""Hierarchical journal YAML: the tree `gazctl journals apply/list -o yaml` speaks.

Push-down flattens a tree into full JournalSpecs; hoist groups specs into
directories holding their shared values.
"""

from gazette_core.broker.journalspace.hoist import hoist
from gazette_core.broker.journalspace.node import Node, validate_tree
from gazette_core.broker.journalspace.pushdown import Leaf, push_down, to_apply_request
from gazette_core.broker.journalspace.yaml_io import (
    dump_tree,
    load_tree,
    spec_from_yaml_dict,
    spec_to_yaml_dict,
)

__all__ = [
    "Leaf",
    "Node",
    "dump_tree",
    "hoist",
    "load_tree",
    "push_down",
    "spec_from_yaml_dict",
    "spec_to_yaml_dict",
    "to_apply_request",
    "validate_tree",
]
