"""The options and input file of `journals apply` and `shards apply`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from gazctl.input_files import read_bounded, read_file
from gazctl.usage import UsageError

MaxTxnSize = typer.Option(0, "--max-txn-size", min=0,
                          help="Most changes per Etcd transaction; 0 (the default): as few "
                               "transactions as fit Etcd's default limit of 128 operations, "
                               "one when all changes fit.")


def SpecsFile(noun: str) -> Any:
    """The `--specs` option: a YAML file of `noun` specs, or - for stdin."""
    return typer.Option("-", "--specs", help=f"YAML file of {noun} specs; - for stdin.")


def DryRun(noun: str) -> Any:
    return typer.Option(False, "--dry-run",
                        help=f"Show each {noun}'s changes against the cluster only.")


def read_specs(path: str) -> str:
    """The text of `--specs`: the file, or stdin for - (UTF-8, within MAX_INPUT_BYTES)."""
    if path == "-":
        return read_bounded(sys.stdin.buffer, "--specs", "stdin")
    try:
        return read_file(Path(path), "--specs")
    except OSError as exc:
        raise UsageError("--specs", f"cannot read {path!r}: {exc.strerror}") from None
