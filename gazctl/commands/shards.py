"""`gazctl shards ...`: the shards command group (consumers' shards, served by consumers)."""

from __future__ import annotations

import typer

from gazctl.commands import shards_list

app = typer.Typer(help="List, apply, edit and unassign the shards of consumer applications.",
                  no_args_is_help=True)
app.command("list")(shards_list.list_shards_cmd)

from gazctl.commands import shards_prune, shards_recover  # noqa: E402

app.command("recover")(shards_recover.recover)
app.command("prune")(shards_prune.prune)
