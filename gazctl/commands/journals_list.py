"""`gazctl journals list`: journals matching a selector, as a table, YAML, JSON or proto text.

`-o json` is Go's form, the whole ListResponse as one object; `-o jsonl` has
one journal a line. A selector matching nothing is an empty listing, not an
error. With --watch the listing is repeated on every change until interrupted.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import typer
from google.protobuf import text_format
from rich.live import Live

from gazctl.commands.selection import label_columns_of, selector_of
from gazctl.config import run
from gazctl.options import BrokerAddress, ListFormat, OutputFormat, Selector, Timeout
from gazctl.render import (
    go_json_object,
    go_list_json,
    json_line,
    message_dict,
    stdout,
    table,
    table_of,
)
from gazette_core.broker.client.journals import list_journals, watch_journals
from gazette_core.broker.journalspace.hoist import hoist
from gazette_core.broker.journalspace.yaml_io import dump_tree
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.labels_ext import values_of
from gazette_core.broker.protocol.suspend_ext import suspend_level

if TYPE_CHECKING:
    from gazette_core.broker.protocol.protocol_pb2_grpc import JournalAsyncStub


def list_journals_cmd(
    selector: str = Selector,
    output: ListFormat = OutputFormat(ListFormat.table),
    primary: bool = typer.Option(False, "-p", "--primary",
                                 help="Show the primary broker (as broker@zone when the "
                                      "routes span several zones)."),
    replicas: bool = typer.Option(False, "-r", "--replicas",
                                  help="Show replica brokers (as broker@zone when the routes "
                                       "span several zones)."),
    rf: bool = typer.Option(False, "--rf", help="Show the replication factor."),
    stores: bool = typer.Option(False, "--stores", help="Show the first fragment store."),
    label_columns: list[str] = typer.Option([], "-L", "--label-columns",
                                            help="Label to show as a column (repeatable)."),
    watch: bool = typer.Option(False, "--watch",
                               help="Keep listing: print the journals again on every change "
                                    "(in place in a terminal) until interrupted."),
    broker: str | None = BrokerAddress,
    timeout: str = Timeout,
) -> None:
    """List journals with their routes: a table, YAML, JSON, JSON lines or proto text.

    -o json is the whole ListResponse as one JSON object, as Go's gazctl prints
    it (proto field names, every field, int64 values as strings), e.g. for
    `| jq '.journals[]'`; -o jsonl prints one journal per line. A selector
    matching no journal prints an empty listing and exits 0.
    """
    sel = selector_of(selector)
    options: Options = (output, primary, replicas, rf, stores, label_columns_of(label_columns))
    if watch:
        run(broker, lambda stub: _watch(stub, sel, options), timeout)
        return
    _print(run(broker, lambda stub: list_journals(stub, sel), timeout), options)


Options = tuple[ListFormat, bool, bool, bool, bool, list[str]]


async def _watch(stub: JournalAsyncStub, sel: pb.LabelSelector, options: Options) -> None:
    """Print every snapshot: a terminal's table is redrawn in place, a pipe gets them all."""
    snapshots = watch_journals(stub, sel)
    if stdout.is_terminal and options[0] is ListFormat.table:
        with Live(console=stdout, auto_refresh=False) as live:
            async for resp in snapshots:
                live.update(table_of(*_table(resp, options)), refresh=True)
        return
    async for resp in snapshots:
        if options[0] is ListFormat.yaml:
            stdout.out("---")  # one YAML document per snapshot
        _print(resp, options)
        sys.stdout.flush()


def _print(resp: pb.ListResponse, options: Options) -> None:
    output = options[0]
    if output is ListFormat.yaml:
        stdout.out(dump_tree(hoist([(j.spec, j.mod_revision) for j in resp.journals])), end="")
    elif output is ListFormat.json:
        go_json_object(go_list_json(resp))
    elif output is ListFormat.jsonl:
        for j in resp.journals:
            json_line(message_dict(j))
    elif output is ListFormat.proto:
        stdout.out(text_format.MessageToString(resp), end="")
    else:
        table(*_table(resp, options))


def _table(resp: pb.ListResponse, options: Options) -> tuple[list[str], list[list[str]]]:
    _, primary, replicas, rf, stores, label_columns = options
    cols = ["Name", *(["RF"] if rf else []), *(["Primary"] if primary else []),
            *(["Replicas"] if replicas else []), *(["Stores"] if stores else []),
            *label_columns]
    # Zones tell something only when there are several of them.
    zoned = len({m.zone for j in resp.journals for m in j.route.members}) > 1
    return cols, [_row(j, options, zoned) for j in resp.journals]


def _member(member: pb.ProcessSpec.ID, zoned: bool) -> str:
    return f"{member.suffix}@{member.zone}" if zoned else member.suffix


def _row(j: pb.ListResponse.Journal, options: Options, zoned: bool) -> list[str]:
    _, primary, replicas, rf, stores, labels = options
    route = j.route
    row = [j.spec.name]
    if rf:
        row.append(str(j.spec.replication))
    if primary:
        cell = _member(route.members[route.primary], zoned) if route.primary >= 0 else "<none>"
        suspended = suspend_level(j.spec) != pb.JournalSpec.Suspend.NONE
        row.append(cell + (" <S>" if suspended else ""))
    if replicas:
        row.append(",".join(_member(m, zoned) for i, m in enumerate(route.members)
                            if i != route.primary) or "<none>")
    if stores:
        row.append(j.spec.fragment.stores[0] if j.spec.fragment.stores else "<none>")
    for name in labels:
        row.append(",".join(values_of(j.spec.labels, name)) or "<none>")
    return row
