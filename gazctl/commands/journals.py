"""`gazctl journals ...`: the journals command group."""

from __future__ import annotations

import typer

from gazctl.commands import (
    journals_append,
    journals_apply,
    journals_edit,
    journals_export,
    journals_fragments,
    journals_list,
    journals_prune,
    journals_read,
    journals_recovery,
    journals_suspend,
)

app = typer.Typer(help="Create, list, append to and read journals.", no_args_is_help=True)
app.command("apply")(journals_apply.apply)
app.command("edit")(journals_edit.edit)
app.command("list")(journals_list.list_journals_cmd)
app.command("append")(journals_append.append)
app.command("read")(journals_read.read)
app.command("fragments")(journals_fragments.fragments)
app.command("prune")(journals_prune.prune)
app.command("export")(journals_export.export)
app.command("reset-head")(journals_recovery.reset_head)
app.command("suspend")(journals_suspend.suspend)
app.command("store-health")(journals_recovery.store_health)
