"""The Typer options several gazctl commands declare alike: addresses, selectors, formats, Spark.

Each command module declares its parameters with these, so a flag reads the
same in every command's `--help`. How the values are used lives elsewhere:
the broker address and `--timeout` in `gazctl.config`, selector completion in
`gazctl.completion`, the file root in `gazctl.file_root`.
"""

from __future__ import annotations

import enum
from typing import Any

import typer

from gazctl.completion import complete_selector

BrokerAddress = typer.Option(
    None, "--broker.address", envvar="BROKER_ADDRESS", show_envvar=True,
    help="Broker endpoint URL, or several separated by commas (the first live one is "
         "used). Defaults to the stack started by `gazctl local up`, else "
         "http://localhost:8080.")
Timeout = typer.Option(
    "10s", "--timeout", envvar="GAZCTL_TIMEOUT",
    help="How long to wait to connect to the broker: a duration like 500ms, 10s or 1m, or "
         "seconds.")
Selector = typer.Option("", "-l", "--selector", autocompletion=complete_selector,
                        help="Label selector, e.g. 'app=clicks, name:prefix=acme/'; "
                             "empty for every journal.")


# Every output format some command's -o takes, filled in as the commands declare theirs:
# `journals read`, whose -o is a file as in Go's gazctl, refuses these as file names.
FORMAT_WORDS: set[str] = set()


def OutputFormat(default: enum.Enum) -> Any:
    """The `-o/--output` option every command with output formats declares.

    `--format` is its older name, still taken. `default` is a member of the
    command's format enum, whose values join FORMAT_WORDS.
    """
    FORMAT_WORDS.update(str(member.value) for member in type(default))
    return typer.Option(default, "-o", "--output", "--format", help="Output format.")


class ListFormat(enum.StrEnum):
    """The output formats of the list commands (`journals list`, `shards list`)."""

    table = "table"
    yaml = "yaml"
    json = "json"
    jsonl = "jsonl"
    proto = "proto"


RequiredSelector = typer.Option(..., "-l", "--selector", autocompletion=complete_selector,
                                help="Label selector of the journals, e.g. "
                                     "'app=clicks, name:prefix=acme/'.")


def SparkMaster(default: str, work: str = "the job") -> Any:
    """The `--spark-master` option of a command running a Spark job that does `work`.

    The command passes Spark's default master, so only commands that run a job
    depend on `spark_jobs`.
    """
    return typer.Option(default, "--spark-master",
                        help=f"Spark master running {work}, e.g. spark://host:7077.")


def DryRun(instead: str = "Count") -> Any:
    """The `--dry-run` option of a prune command; `instead` is what it does rather than delete."""
    return typer.Option(False, "--dry-run",
                        help=f"{instead} what would be pruned; delete nothing.")
