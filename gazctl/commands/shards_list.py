"""`gazctl shards list`: shards matching a selector, as a table, YAML, JSON or proto text.

A shard's status is the worst of its replicas' (IDLE < BACKFILL < STANDBY <
PRIMARY < FAILED; IDLE without replicas). `--lag` asks the shard's primary
how far it has read each source (Stat) and the brokers for each source's
write head; the difference is what the shard has yet to read
(`gazette_core.consumer.api.lag`). A shard whose primary cannot be asked (a
fail-over) is listed with its lag marked `<unreachable>` or `<no primary>`,
each unreachable consumer gets one warning line, and only a listing with no
lag measured at all fails. `-o json` is Go's form, the whole ListResponse as
one object; `-o jsonl` has one shard a line. A selector matching nothing is an
empty listing, not an error. With --watch the listing is repeated whenever it
changes, until interrupted.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections import Counter
from dataclasses import dataclass

import typer
from google.protobuf import text_format
from rich.live import Live
from rich.table import Column
from rich.text import Text

from gazctl.commands.selection import label_columns_of, selector_of
from gazctl.consumer_config import Clients, ConsumerAddress, ShardSelector, run_shards
from gazctl.options import BrokerAddress, ListFormat, OutputFormat, Timeout
from gazctl.render import (
    go_json_object,
    go_list_json,
    json_line,
    message_dict,
    stderr,
    stdout,
    table,
    table_of,
)
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.labels_ext import values_of
from gazette_core.consumer.api.client import list_shards
from gazette_core.consumer.api.lag import Lags, measure
from gazette_core.consumer.protocol import consumer_pb2 as cpb
from gazette_core.consumer.shardspace import dump_set, hoist
from gazette_core.errors import UnavailableError

WATCH_INTERVAL_S = 1.0  # the Shard API has no watch: --watch lists again this often


@dataclass
class Options:
    output: ListFormat
    primary: bool
    replicas: bool
    rf: bool
    lag: bool
    label_columns: list[str]


def list_shards_cmd(
    selector: str = ShardSelector,
    output: ListFormat = OutputFormat(ListFormat.table),
    primary: bool = typer.Option(False, "-p", "--primary",
                                 help="Show the primary consumer and its status."),
    replicas: bool = typer.Option(False, "-r", "--replicas",
                                  help="Show the other consumers of each shard and their "
                                       "statuses."),
    rf: bool = typer.Option(False, "--rf", help="Show the replication factor (hot standbys "
                                               "+ 1; 0 when disabled)."),
    label_columns: list[str] = typer.Option([], "-L", "--label-columns",
                                            help="Label to show as a column (repeatable)."),
    lag: bool = typer.Option(False, "--lag",
                             help="Show the bytes each shard has yet to read of each source, "
                                  "and their total (asks the brokers for write heads)."),
    watch: bool = typer.Option(False, "--watch",
                               help="Keep listing: print the shards again on every change "
                                    "(in place in a terminal) until interrupted."),
    consumer: str | None = ConsumerAddress,
    broker: str | None = BrokerAddress,
    timeout: str = Timeout,
) -> None:
    """List shards with their statuses and routes: a table, YAML, JSON, JSON lines or proto text.

    -o json is the whole ListResponse as one JSON object, as Go's gazctl prints
    it (proto field names, every field, int64 values as strings); -o jsonl prints
    one shard per line. -o yaml hoists what all shards share into `common`, and
    applies back with `shards apply`. With --lag, a shard whose primary cannot
    be asked shows its lag as <unreachable> or <no primary> (null in JSON), with
    a warning per unreachable consumer; exits 1 only when no shard's lag could
    be measured. A selector matching no shard prints an empty listing and exits 0.
    """
    sel = selector_of(selector)
    options = Options(output, primary, replicas, rf, lag, label_columns_of(label_columns))
    if watch:
        run_shards(consumer, lambda c: _watch(c, sel, options), timeout,
                   broker=broker, with_broker=lag)
        return
    resp, lags = run_shards(consumer, lambda c: _listing(c, sel, lag), timeout,
                            broker=broker, with_broker=lag)
    _warn(lags)
    _print(resp, lags, options)
    if lag and not lags.known:
        whys = Counter(lags.unknown.values())
        raise UnavailableError("no shard's lag could be measured (" + ", ".join(
            f"{why}: {count}" for why, count in sorted(whys.items())) + ")")


async def _listing(clients: Clients, sel: pb.LabelSelector, lag: bool
                   ) -> tuple[cpb.ListResponse, Lags]:
    resp = await list_shards(clients.shards, sel)
    return resp, (await measure(clients.shards, clients.brokers(), resp) if lag else Lags())


def _warn(lags: Lags) -> None:
    """One line per consumer whose shards' lag is unknown because it could not be reached."""
    for down in lags.unreachable:
        who = f"consumer {down.consumer} at {down.endpoint}" if down.consumer else "the primary"
        stderr.print(f"warning: cannot reach {who}, primary of {', '.join(down.shards)}: "
                     f"lag shown as <unreachable> ({down.reason})", highlight=False,
                     markup=False)


async def _watch(clients: Clients, sel: pb.LabelSelector, options: Options) -> None:
    """Print every changed listing: a terminal's table is redrawn in place, a pipe gets all."""
    live = (Live(console=stdout, auto_refresh=False)
            if stdout.is_terminal and options.output is ListFormat.table else None)
    last: tuple[bytes, Lags] | None = None
    with live or contextlib.nullcontext():
        while True:
            resp, lags = await _listing(clients, sel, options.lag)
            seen = (_without_header(resp), lags)
            if seen != last:
                last = seen
                _warn(lags)
                if live is not None:
                    live.update(table_of(*_table(resp, lags, options)), refresh=True)
                else:
                    _print_again(resp, lags, options)
            await asyncio.sleep(WATCH_INTERVAL_S)


def _print_again(resp: cpb.ListResponse, lags: Lags, options: Options) -> None:
    """A listing after the ones before it: YAML documents are separated, JSON one a line."""
    if options.output is ListFormat.yaml:
        stdout.out("---")
    _print(resp, lags, options)
    sys.stdout.flush()


def _without_header(resp: cpb.ListResponse) -> bytes:
    """The listing without its header, whose revision moves on every Etcd write."""
    copy = cpb.ListResponse()
    copy.CopyFrom(resp)
    copy.ClearField("header")
    return copy.SerializeToString(deterministic=True)


def _print(resp: cpb.ListResponse, lags: Lags, options: Options) -> None:
    if options.output is ListFormat.yaml:
        shard_set = hoist([(s.spec, s.mod_revision) for s in resp.shards])
        if options.lag:  # in each shard's comment, which `apply` ignores
            for entry in shard_set.shards:
                entry.comment = f"lag: {_lag_cell(entry.spec.id, lags)}"
        stdout.out(dump_set(shard_set), end="")
    elif options.output is ListFormat.json:
        whole = go_list_json(resp)
        if options.lag:
            for s, doc in zip(resp.shards, whole["shards"], strict=True):
                _add_lag(doc, s.spec.id, lags)
        go_json_object(whole)
    elif options.output is ListFormat.jsonl:
        for s in resp.shards:
            doc = message_dict(s)
            if options.lag:
                _add_lag(doc, s.spec.id, lags)
            json_line(doc)
    elif options.output is ListFormat.proto:
        stdout.out(text_format.MessageToString(resp), end="")
    else:
        table(*_table(resp, lags, options))


def _add_lag(doc: dict[str, object], shard: str, lags: Lags) -> None:
    """Bytes behind each source's write head, as in the table, beside the shard's fields."""
    doc["lag"] = lags.known.get(shard)
    if shard in lags.unknown:
        doc["lag_unknown"] = lags.unknown[shard]


def status_of(shard: cpb.ListResponse.Shard) -> int:
    """The shard's reduced status: its worst replica's, IDLE when it has none."""
    return max((s.code for s in shard.status), default=cpb.ReplicaStatus.IDLE)


def _code(code: int) -> str:
    return cpb.ReplicaStatus.Code.Name(code)  # type: ignore[arg-type]


def _table(resp: cpb.ListResponse, lags: Lags, options: Options
           ) -> tuple[list[str | Column], list[list[str | Text]]]:
    cols: list[str | Column] = ["ID", "Status", *(["RF"] if options.rf else []),
            *(["Primary"] if options.primary else []),
            *(["Replicas"] if options.replicas else []), *options.label_columns,
            *(["Lag"] if options.lag else [])]
    rows: list[list[str | Text]] = [[*_row(s, lags, options)] for s in resp.shards]
    if options.lag:
        # Unknown lags are at least 0, so with some the total is a lower bound.
        total = (">=" if lags.unknown else "") + str(lags.total())
        rows.append(["total", "", *[""] * (len(cols) - 3), total])
    errors = [first_error(s) for s in resp.shards]
    if not any(errors):
        return cols, rows
    # Last, and the only column a terminal too narrow for the table narrows: each error is
    # cut there, and the rest of its row stays whole. Piped, it is whole.
    cols = [*(Column(str(col), no_wrap=True) for col in cols), Column("Error")]
    cells = [Text(error, no_wrap=True, overflow="ellipsis") for error in errors]
    return cols, [[*row, cell] for row, cell in zip(rows, [*cells, Text()], strict=False)]


def first_error(shard: cpb.ListResponse.Shard) -> str:
    """The first line of the first error a FAILED replica of `shard` reported, else ""."""
    for status in shard.status:
        if status.code == cpb.ReplicaStatus.FAILED and status.errors:
            return status.errors[0].strip().split("\n", 1)[0]
    return ""


def _member(shard: cpb.ListResponse.Shard, index: int) -> str:
    code = shard.status[index].code if index < len(shard.status) else cpb.ReplicaStatus.IDLE
    return f"{shard.route.members[index].suffix}:{_code(code)}"


def _row(shard: cpb.ListResponse.Shard, lags: Lags, options: Options) -> list[str]:
    route = shard.route
    row = [shard.spec.id, _code(status_of(shard))]
    if options.rf:
        row.append("0" if shard.spec.disable else str(shard.spec.hot_standbys + 1))
    if options.primary:
        row.append(_member(shard, route.primary) if route.primary >= 0 else "<none>")
    if options.replicas:
        row.append(",".join(_member(shard, i) for i in range(len(route.members))
                            if i != route.primary) or "<none>")
    for name in options.label_columns:
        row.append(",".join(values_of(shard.spec.labels, name)) or "<none>")
    if options.lag:
        row.append(_lag_cell(shard.spec.id, lags))
    return row


def _lag_cell(shard: str, lags: Lags) -> str:
    """`journal:bytes, ...`, `<none>` without sources, `<unreachable>` or `<no primary>`."""
    if shard in lags.unknown:
        return f"<{lags.unknown[shard]}>"
    return ", ".join(f"{j}:{n}" for j, n in lags.known.get(shard, {}).items()) or "<none>"
