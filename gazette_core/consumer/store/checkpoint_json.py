"""Checkpoint as Go's `encoding/json` writes the generated struct.

See docs/design/consumer.md#the-json-file-store.

`sources` and `ack_intents` are left out when empty; `producers` is `null` when empty;
an entry's `state` is always present; `read_through`, `id`, `last_ack` and `begin` are
left out when zero; bytes are standard base64. `last_ack` is a uint64 and may exceed
2^53, which Python's integers carry exactly.
"""

from __future__ import annotations

import base64
from typing import Any

from gazette_core.consumer.protocol.consumer_pb2 import Checkpoint


def checkpoint_to_json(checkpoint: Checkpoint) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    if checkpoint.sources:
        doc["sources"] = {
            journal: _source_to_json(source)
            for journal, source in sorted(checkpoint.sources.items())
        }
    if checkpoint.ack_intents:
        doc["ack_intents"] = {
            journal: base64.b64encode(intent).decode()
            for journal, intent in sorted(checkpoint.ack_intents.items())
        }
    return doc


def _source_to_json(source: Checkpoint.Source) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    if source.read_through:
        doc["read_through"] = source.read_through
    producers = []
    for entry in source.producers:
        item: dict[str, Any] = {}
        if entry.id:
            item["id"] = base64.b64encode(entry.id).decode()
        state: dict[str, Any] = {}
        if entry.state.last_ack:
            state["last_ack"] = entry.state.last_ack
        if entry.state.begin:
            state["begin"] = entry.state.begin
        item["state"] = state
        producers.append(item)
    doc["producers"] = producers or None
    return doc


def checkpoint_from_json(doc: dict[str, Any] | None) -> Checkpoint:
    checkpoint = Checkpoint()
    for journal, src in ((doc or {}).get("sources") or {}).items():
        source = checkpoint.sources[journal]
        source.read_through = int(src.get("read_through") or 0)
        for item in src.get("producers") or []:
            entry = source.producers.add()
            entry.id = base64.b64decode(item.get("id") or "")
            state = item.get("state") or {}
            entry.state.last_ack = int(state.get("last_ack") or 0)
            entry.state.begin = int(state.get("begin") or 0)
    for journal, intent in ((doc or {}).get("ack_intents") or {}).items():
        checkpoint.ack_intents[journal] = base64.b64decode(intent)
    return checkpoint
