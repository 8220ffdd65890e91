"""Where `file://` fragment stores live for commands that reach stores themselves (prune).

Such a command must use the same directory as the brokers' `--broker.file-root`,
found from, in order: `--file-root`, `$BROKER_FILE_ROOT` (which `gazctl local
env` exports), gazctl.ini's `FileRoot`, then the active local stack when the
broker address is one of its brokers. There is no default: a guessed
directory could hold another cluster's fragments.
"""

from __future__ import annotations

import typer

from gazctl.ini import load as load_ini
from gazette_core.local.stack import fragments_dir_of

ENV = "BROKER_FILE_ROOT"

FileRoot = typer.Option(
    None, "--file-root", envvar=ENV, show_envvar=True,
    help="The brokers' --broker.file-root, where file:// fragment stores live. Default: "
         "gazctl.ini's FileRoot, else the local stack's when the broker is one of its; "
         "no other default.")
FileOnly = typer.Option(
    False, "--file-only", envvar="BROKER_FILE_ONLY", show_envvar=True,
    help="Every fragment store is file:/// under --file-root, as on brokers run with "
         "--broker.file-only.")


def resolve_file_root(flag: str | None, address: str) -> tuple[str | None, str]:
    """The file root and where it came from; (None, "unknown") when nothing says.

    Typer fills `flag` from $BROKER_FILE_ROOT when the flag is absent.
    """
    if flag:
        return flag, f"--file-root or ${ENV}"
    ini = load_ini()
    if (value := ini.get("fileroot")) is not None:
        return value, str(ini.path)
    if (local := fragments_dir_of(address)) is not None:
        return str(local), "the active local stack"
    return None, "unknown"
