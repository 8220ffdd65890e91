"""`gazctl shards ...`: the shards command group (consumers' shards, served by consumers)."""

from __future__ import annotations

import typer

from gazctl.commands import shards_apply, shards_list, shards_prune, shards_recover, shards_unassign

app = typer.Typer(help="Operate the shards of consumer applications, through their consumers.",
                  no_args_is_help=True)
app.command("list")(shards_list.list_shards_cmd)
app.command("apply")(shards_apply.apply)
app.command("edit")(shards_apply.edit)
app.command("unassign")(shards_unassign.unassign_cmd)
app.command("recover")(shards_recover.recover)
app.command("prune")(shards_prune.prune)
