"""`gazctl shards recover`: play a shard's recovery log into a local directory.

The shard's hints come from the consumer (GetHints); the log is read through
the brokers, from the hinted segments to the write head, with the same
Player a recovering replica uses. On a terminal a progress bar shows bytes,
rate and ETA. The restored files (path and size) are printed at the end.
"""

from __future__ import annotations

import enum
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import typer

from gazctl.consumer_config import Clients, ConsumerAddress, run_shards
from gazctl.options import BrokerAddress, OutputFormat, Timeout
from gazctl.render import humanize_bytes, stderr, table
from gazctl.routes import journal_client
from gazctl.usage import NothingDone, UsageError
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.consumer.api.client import get_hints, list_shards
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.protocol.shard_spec_ext import recovery_log, validate_shard_id
from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.consumer.recoverylog.player import Player
from gazette_core.consumer.recoverylog.progress_bar import play_with_progress
from gazette_core.errors import GazetteError, ValidationError

SLOT = re.compile(r"primary|backup\.(\d+)")


class Format(enum.StrEnum):
    table = "table"
    json = "json"


class NoSuchShard(NothingDone):
    """No shard has the asked-for id (exit 3: nothing to act on)."""


class NoHintsError(GazetteError):
    """The chosen hint slot of the shard holds no hints."""


@dataclass
class Recovered:
    """What one recovery restored: from which log and hints, and the files it wrote."""

    shard: str
    log: str
    hints: str
    directory: str
    files: list[tuple[str, int]] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {"shard": self.shard, "log": self.log, "hints": self.hints,
                "directory": self.directory,
                "files": [{"path": p, "bytes": n} for p, n in self.files],
                "bytes": sum(n for _, n in self.files)}


def check_id(shard: str) -> None:
    """`--id` is checked as the consumers check shard ids, before anything is asked."""
    try:
        validate_shard_id(shard, "")
    except ValidationError as exc:
        raise UsageError("--id", f"shard id {shard!r}: {exc.reason}") from None


def check_slot(text: str) -> str:
    """`--hints` must be primary or backup.N (or empty: the default choice)."""
    if text and not SLOT.fullmatch(text):
        raise UsageError("--hints", f"expected primary or backup.N (e.g. backup.0), got {text!r}")
    return text


def check_directory(directory: Path) -> None:
    """Recovery replaces its directory: refuse one that holds anything."""
    if directory.exists() and not directory.is_dir():
        raise UsageError("--dir", f"{str(directory)!r} exists and is not a directory")
    if directory.is_dir() and any(directory.iterdir()):
        raise UsageError("--dir", f"{str(directory)!r} is not empty; recover into a new or "
                                  "empty directory")


def choose_hints(spec: cpb.ShardSpec, resp: cpb.GetHintsResponse, slot: str
                 ) -> tuple[str, rpb.FSMHints]:
    """The hints of `slot`, or by default primary, else the newest backup, else none."""
    if not slot:
        if resp.primary_hints.HasField("hints"):
            return "primary", resp.primary_hints.hints
        for i, backup in enumerate(resp.backup_hints):
            if backup.HasField("hints"):
                return f"backup.{i}", backup.hints
        return "none (the whole log)", rpb.FSMHints(log=recovery_log(spec))
    if slot == "primary":
        entry = resp.primary_hints
    else:
        index = int(slot.removeprefix("backup."))
        if index >= len(resp.backup_hints):
            raise UsageError("--hints", f"shard {spec.id} keeps {len(resp.backup_hints)} backup "
                                        f"hints (backup.0 to backup.{len(resp.backup_hints) - 1})"
                             if resp.backup_hints else f"shard {spec.id} keeps no backup hints")
        entry = resp.backup_hints[index]
    if not entry.HasField("hints"):
        raise NoHintsError(f"shard {spec.id} has no {slot} hints")
    return slot, entry.hints


async def find_shard(clients: Clients, shard: str) -> cpb.ShardSpec:
    sel = pb.LabelSelector(include=pb.LabelSet(labels=[pb.Label(name="id", value=shard)]))
    listed = await list_shards(clients.shards, sel)
    if len(listed.shards) != 1:
        raise NoSuchShard(f"no shard exists with id {shard!r}")
    spec: cpb.ShardSpec = listed.shards[0].spec
    if not recovery_log(spec):
        raise GazetteError(f"shard {shard} has no recovery log (its recovery_log_prefix is "
                           "empty): there is nothing to recover")
    return spec


async def recover_into(clients: Clients, shard: str, slot: str, directory: Path) -> Recovered:
    """Play `shard`'s recovery log from the chosen hints into `directory`."""
    spec = await find_shard(clients, shard)
    chosen, hints = choose_hints(spec, await get_hints(clients.shards, shard), slot)
    player = Player()
    player.finish_at_write_head()
    resolved = await play_with_progress(player, hints, str(directory),
                                        journal_client(clients.brokers(), needed=True), stderr)
    return Recovered(shard, resolved.log, chosen, str(directory), restored_files(directory))


def restored_files(directory: Path) -> list[tuple[str, int]]:
    """Every regular file under `directory`, relative and sorted, with its size."""
    out = []
    for root, _, names in os.walk(directory):
        for name in names:
            path = Path(root) / name
            out.append((str(path.relative_to(directory)), path.stat().st_size))
    return sorted(out)


def recover(
    shard: str = typer.Option(..., "--id", help="Id of the shard to recover."),
    directory: Path = typer.Option(..., "-d", "--dir", help="Directory to recover into; it "
                                   "must be empty or not exist yet."),
    hints: str = typer.Option("", "--hints", help="Hints to play from: primary or backup.N "
                              "(0 is the newest backup). Default: primary, else the newest "
                              "backup, else the whole log."),
    output: Format = OutputFormat(Format.table),
    consumer: str | None = ConsumerAddress,
    broker: str | None = BrokerAddress,
    timeout: str = Timeout,
) -> None:
    """Play a shard's recovery log into a local directory and list the restored files.

    Hints come from the consumer, the log from the brokers; playback reads the
    hinted segments up to the log's write head, with a progress bar (bytes, rate,
    ETA) on a terminal. Exit codes: 0 done, 1 error (no hints in the chosen slot,
    playback failed: the directory is then removed), 2 usage error (a bad --id or
    --hints, a non-empty --dir), 3 no shard has the id.
    """
    check_id(shard)
    slot = check_slot(hints)
    check_directory(directory)
    got = run_shards(consumer, lambda clients: recover_into(clients, shard, slot, directory),
                     timeout, broker=broker, with_broker=True)
    if output is Format.json:
        sys.stdout.write(json.dumps(got.as_dict(), separators=(",", ":")) + "\n")
        return
    count = f"{len(got.files)} file" + ("" if len(got.files) == 1 else "s")
    stderr.print(f"recovered shard {got.shard} from {got.log} (hints: {got.hints}) into "
                 f"{got.directory}: {count}, {humanize_bytes(sum(n for _, n in got.files))}",
                 highlight=False, markup=False)
    table(["Path", "Size"], [[p, str(n)] for p, n in got.files])
