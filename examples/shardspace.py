"""Shard YAML for the examples: `common:` plus `shards:`, as Gazette's shardspace.

Each shard takes every field it leaves unset from `common` (push-down), and the
result is validated. Used by the examples' tests and to apply their shards to a
running consumer:

    python -m examples.shardspace apply examples/stream_sum/shards.yaml
    python -m examples.shardspace status
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from examples.local import default_consumer
from gazette_core.broker.protocol.durations_ext import parse_duration
from gazette_core.consumer.client import apply_shards, list_shards
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol.shard_spec_ext import validate_shard_spec

_SCALARS = ("id", "recovery_log_prefix", "hint_prefix", "hint_backups", "disable",
            "hot_standbys", "disable_wait_for_ack", "ring_buffer_size", "read_channel_size")
_DURATIONS = ("max_txn_duration", "min_txn_duration")


def _fill(spec: cpb.ShardSpec, data: dict[str, Any]) -> None:
    for key, value in data.items():
        if key in _SCALARS:
            setattr(spec, key, value)
        elif key in _DURATIONS:
            getattr(spec, key).CopyFrom(parse_duration(str(value), key))
        elif key == "sources":
            spec.sources.extend(cpb.ShardSpec.Source(journal=s["journal"],
                                                     min_offset=s.get("min_offset", 0))
                                for s in value)
        elif key == "labels":
            for label in value:
                spec.labels.labels.add(name=label["name"], value=label["value"])
        elif key not in ("revision", "comment"):
            raise ValueError(f"unknown shard field {key!r}")


def load_shards(text: str) -> list[cpb.ShardSpec]:
    """The shards of a shard YAML document, each pushed down from `common` and valid."""
    doc = YAML(typ="safe").load(text) or {}
    specs = []
    for data in doc.get("shards") or []:
        common, own = cpb.ShardSpec(), cpb.ShardSpec()
        _fill(common, doc.get("common") or {})
        _fill(own, data)
        # Fields a shard sets replace the common ones; repeated ones too, not appended.
        for field, _ in own.ListFields():
            common.ClearField(field.name)  # type: ignore[arg-type]
        common.MergeFrom(own)
        validate_shard_spec(common)
        specs.append(common)
    return specs


def upserts(specs: list[cpb.ShardSpec]) -> list[cpb.ApplyRequest.Change]:
    """Upsert every spec whatever its current revision (re-applying is safe)."""
    return [cpb.ApplyRequest.Change(upsert=s, expect_mod_revision=-1) for s in specs]


async def _apply(address: str, specs: list[cpb.ShardSpec]) -> None:
    await apply_shards(address, upserts(specs))


def status_lines(resp: cpb.ListResponse) -> list[str]:
    """One line per shard: its id, then each replica's consumer and status, primary first."""
    lines = []
    for entry in resp.shards:
        replicas = sorted(zip(entry.route.members, entry.status, strict=True),
                          key=lambda r: -r[1].code)
        shown = [f"{m.suffix}={cpb.ReplicaStatus.Code.Name(s.code)}" for m, s in replicas]
        lines.append(f"{entry.spec.id:<20} {' '.join(shown) or '(unassigned)'}")
    return lines


async def _status(address: str) -> None:
    for line in status_lines(await list_shards(address)):
        print(line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.shardspace",
                                     description="Apply an example's shard YAML, or show "
                                                 "where each shard runs.")
    parser.add_argument("command", choices=["apply", "status"])
    parser.add_argument("file", type=Path, nargs="?", help="Shard YAML (apply)")
    parser.add_argument("--consumer.address", dest="address", default=default_consumer(),
                        help="Consumer endpoint (default: $CONSUMER_ADDRESS, else the local "
                             "stack's first live consumer)")
    args = parser.parse_args(argv)
    if args.command == "status":
        asyncio.run(_status(args.address))
        return 0
    if args.file is None:
        parser.error("apply needs the shard YAML file")
    specs = load_shards(args.file.read_text())
    asyncio.run(_apply(args.address, specs))
    print(f"applied {len(specs)} shards")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
