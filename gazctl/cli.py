"""gazctl's command tree, and the one place errors are printed.

Every failure is one red line on stderr (what was wrong and, when known, how
to fix it) and an exit code of the convention in docs/reference/conventions.md:
0 done, 1 the operation failed, 2 the command line is wrong (nothing was done),
3 a selector matched nothing or nothing was done, 130 interrupted.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

import typer
from typer._click import exceptions as click  # Typer ships its own copy of click.

from gazctl.commands.attach_uuids import attach_uuids
from gazctl.commands.journals import app as journals_app
from gazctl.commands.local import app as local_app
from gazctl.commands.print_config import print_config
from gazctl.commands.shards import app as shards_app
from gazctl.connection import forget
from gazctl.go_args import GoStyleCommand
from gazctl.group_options import add_group_options
from gazctl.help_text import unwrap_app
from gazctl.ini import load as load_ini
from gazctl.ini_defaults import default_map
from gazctl.logs import configured
from gazctl.render import force_colour, print_error, print_usage_error
from gazctl.usage import INTERRUPTED, USAGE
from gazette_core.errors import GazetteError

PACKAGE = "gazette-py"

app = typer.Typer(
    name="gazctl",
    help="Operate Gazette brokers and consumers: journals, fragments, shards and a local "
         "development stack.\n\n"
         "Exit codes: 0 done, 1 the operation failed, 2 the command line is wrong (nothing "
         "was done), 3 the selector matched nothing to act on or nothing was done (a list "
         "matching nothing exits 0), 130 interrupted. "
         "-o/--output is an output format, except in journals read, where it names the file "
         "written (as in Go's gazctl); durations are Go durations or seconds.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    # Go's gazctl takes -h too; subcommands inherit the names from this context.
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _show_version(value: bool) -> None:
    if value:
        try:
            number = version(PACKAGE)
        except PackageNotFoundError:  # run from a source tree that was never installed
            number = "unknown"
        typer.echo(f"gazctl {number}")
        raise typer.Exit()


@app.callback()
def _root(ctx: typer.Context,
          _version: bool = typer.Option(False, "--version", is_eager=True,
                                        callback=_show_version,
                                        help="Print gazctl's version and exit.")) -> None:
    """The root command itself only takes --version; its help is the app's.

    Before any command: stderr notices as by default (a group's subcommand sets
    its own --log.* up), and defaults of subcommand options from gazctl.ini.
    """
    forget()
    ctx.with_resource(configured())
    ctx.default_map = default_map(ctx.command, load_ini())


def _go_style(app: typer.Typer) -> None:
    """Every command of `app`'s tree reads `-X=value` as Go's gazctl does (gazctl.go_args)."""
    for info in app.registered_commands:
        info.cls = GoStyleCommand
    for group in app.registered_groups:
        if group.typer_instance is not None:
            _go_style(group.typer_instance)


app.add_typer(journals_app, name="journals")
app.add_typer(shards_app, name="shards")
app.add_typer(local_app, name="local")
app.command("print-config")(print_config)
app.command("attach-uuids")(attach_uuids)
# After every command is registered: the journals and shards groups and their subcommands get
# the groups' options (addresses, TLS, auth, route cache, zone, logging), as in Go's gazctl.
add_group_options(app)
_go_style(app)
# Last: every help text, the connection options' included, as paragraphs the terminal wraps.
unwrap_app(app)


def run_cli(argv: list[str] | None = None) -> int:
    """Run gazctl on `argv` (default: the process's arguments); its exit code."""
    try:
        code = app(args=argv, prog_name="gazctl", standalone_mode=False)
    except click.NoArgsIsHelpError:
        return USAGE  # the help is printed already, as click does for a bare group
    except click.UsageError as exc:
        print_usage_error(exc)
        return USAGE
    except typer.Abort:  # end of input at a prompt, or Ctrl-C there
        return INTERRUPTED
    except click.ClickException as exc:
        print_error(GazetteError(exc.format_message()))
        return exc.exit_code
    except GazetteError as exc:
        print_error(exc)
        return int(getattr(exc, "exit_code", 1))
    except KeyboardInterrupt:
        return INTERRUPTED
    except OSError as exc:  # a file or pipe failed outside any command's own checks
        print_error(GazetteError(f"{exc.strerror or exc}"
                                 + (f": {exc.filename}" if exc.filename else "")))
        return 1
    finally:
        force_colour(False)  # --log.format=color coloured the error line too; no further
    # Typer answers --help, --version and Ctrl-C with an exit code, commands with None.
    return code if isinstance(code, int) else 0
