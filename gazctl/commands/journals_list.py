"""`gazctl journals list`: journals matching a selector, as a table, YAML or JSON."""

from __future__ import annotations

import enum

import typer

from gazctl.config import BrokerAddress, Selector, run
from gazctl.render import json_line, message_dict, stdout, table
from gazette_core.broker.client.journals import list_journals
from gazette_core.broker.journalspace.hoist import hoist
from gazette_core.broker.journalspace.yaml_io import dump_tree
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.labels_ext import parse_selector, values_of


class Format(enum.StrEnum):
    table = "table"
    yaml = "yaml"
    json = "json"


def list_journals_cmd(
    selector: str = Selector,
    output: Format = typer.Option(Format.table, "-o", "--format", help="Output format."),
    primary: bool = typer.Option(False, "-p", "--primary", help="Show the primary broker."),
    replicas: bool = typer.Option(False, "-r", "--replicas", help="Show replica brokers."),
    rf: bool = typer.Option(False, "--rf", help="Show the replication factor."),
    stores: bool = typer.Option(False, "--stores", help="Show the first fragment store."),
    label_columns: list[str] = typer.Option([], "-L", "--label-columns",
                                            help="Label to show as a column (repeatable)."),
    broker: str | None = BrokerAddress,
) -> None:
    """List journals with their routes. JSON output is one journal per line."""
    sel = parse_selector(selector)
    resp = run(broker, lambda stub: list_journals(stub, sel))
    if output is Format.yaml:
        stdout.out(dump_tree(hoist([(j.spec, j.mod_revision) for j in resp.journals])), end="")
    elif output is Format.json:
        for j in resp.journals:
            json_line(message_dict(j))
    else:
        cols = ["Name", *(["RF"] if rf else []), *(["Primary"] if primary else []),
                *(["Replicas"] if replicas else []), *(["Stores"] if stores else []),
                *label_columns]
        table(cols, [_row(j, primary, replicas, rf, stores, label_columns)
                     for j in resp.journals])



def _row(j: pb.ListResponse.Journal, primary: bool, replicas: bool, rf: bool, stores: bool,
         labels: list[str]) -> list[str]:
    route = j.route
    row = [j.spec.name]
    if rf:
        row.append(str(j.spec.replication))
    if primary:
        cell = route.members[route.primary].suffix if route.primary >= 0 else "<none>"
        suspended = j.spec.HasField("suspend") and j.spec.suspend.level != 0
        row.append(cell + (" <S>" if suspended else ""))
    if replicas:
        row.append(",".join(m.suffix for i, m in enumerate(route.members)
                            if i != route.primary) or "<none>")
    if stores:
        row.append(j.spec.fragment.stores[0] if j.spec.fragment.stores else "<none>")
    for name in labels:
        row.append(",".join(values_of(j.spec.labels, name)) or "<none>")
    return row
