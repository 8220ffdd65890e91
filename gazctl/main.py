"""gazctl entry point: the command tree, and the one place errors are printed.

Library errors become one red line on stderr (what was wrong and how to fix
it) and exit code 1, or 3 when a selector that must match journals matched
none; usage errors exit 2 and `--help` exits 0.
"""

from __future__ import annotations

import sys

import typer

from gazctl.commands.attach_uuids import attach_uuids
from gazctl.commands.journals import app as journals_app
from gazctl.commands.local import app as local_app
from gazctl.commands.print_config import print_config
from gazctl.connection import add_connection_options
from gazctl.render import print_error
from gazette_core.errors import GazetteError

app = typer.Typer(
    name="gazctl",
    help="Operate Gazette brokers: journals, fragments and a local development stack.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    # Go's gazctl takes -h too; subcommands inherit the names from this context.
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(journals_app, name="journals")
app.add_typer(local_app, name="local")
app.command("print-config")(print_config)
app.command("attach-uuids")(attach_uuids)
# After every command is registered: each one that dials a broker gets the TLS and auth options.
add_connection_options(app)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except GazetteError as exc:
        print_error(exc)
        sys.exit(getattr(exc, "exit_code", 1))
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
