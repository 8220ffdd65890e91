"""Labels, LabelSets and LabelSelectors: the public import point.

The implementation is split by concept: character classes in `names_ext`,
set construction/validation/register operations in `labelset_ext`, and
selector matching and grammar in `selector_ext`. Callers import from here.
"""

from __future__ import annotations

from gazette_core.broker.protocol.labelset_ext import (
    CONTENT_TYPE,
    CONTENT_TYPE_CSV,
    CONTENT_TYPE_JSON_LINES,
    CONTENT_TYPE_PROTOBUF_FIXED,
    CONTENT_TYPE_RECOVERY_LOG,
    INSTANCE,
    MANAGED_BY,
    MAX_NAME_LEN,
    MAX_VALUE_LEN,
    MESSAGE_SUB_TYPE,
    MESSAGE_TYPE,
    META_NAME,
    META_PREFIX,
    MIN_NAME_LEN,
    REGION,
    SINGLE_VALUE_LABELS,
    TAG,
    format_label,
    join_path,
    label_set,
    label_set_from,
    subtract_label_sets,
    union_label_sets,
    validate_label,
    validate_label_set,
    values_of,
)
from gazette_core.broker.protocol.names_ext import validate_path_chars, validate_token
from gazette_core.broker.protocol.selector_ext import (
    format_selector,
    matches,
    parse_selector,
    rewrite_prefix_meta,
    validate_selector,
    with_meta_name,
)

__all__ = [
    "CONTENT_TYPE",
    "CONTENT_TYPE_CSV",
    "CONTENT_TYPE_JSON_LINES",
    "CONTENT_TYPE_PROTOBUF_FIXED",
    "CONTENT_TYPE_RECOVERY_LOG",
    "INSTANCE",
    "MANAGED_BY",
    "MAX_NAME_LEN",
    "MAX_VALUE_LEN",
    "MESSAGE_SUB_TYPE",
    "MESSAGE_TYPE",
    "META_NAME",
    "META_PREFIX",
    "MIN_NAME_LEN",
    "REGION",
    "SINGLE_VALUE_LABELS",
    "TAG",
    "format_label",
    "format_selector",
    "join_path",
    "label_set",
    "label_set_from",
    "matches",
    "parse_selector",
    "rewrite_prefix_meta",
    "subtract_label_sets",
    "union_label_sets",
    "validate_label",
    "validate_label_set",
    "validate_path_chars",
    "validate_selector",
    "validate_token",
    "values_of",
    "with_meta_name",
]
