"""Shell completion of `-l/--selector` values from the broker's journals.

Typer completes commands and option names itself (`gazctl --install-completion`
installs the script). This module completes the selector's last clause:
`name=<journal>` (and `name:prefix=` / `prefix=` with directory prefixes too),
`<label>=` for every label name the journals carry, and `<label>=<value>`.

The broker is the one the command would use (`--broker.address` if already
typed, else $BROKER_ADDRESS, gazctl.ini, the local stack). Completion runs
inside the user's shell, so it gives up after TIMEOUT seconds and any failure
means no suggestions, never an error message or a traceback.
"""

from __future__ import annotations

import asyncio
import os

import typer

from gazctl.config import broker_addresses
from gazctl.connection import client_config
from gazctl.endpoints import pick_live
from gazctl.interrupts import run as run_interruptible
from gazette_core.broker.client.channel import close_channels, journal_stub, use_client_config
from gazette_core.broker.client.journals import list_journals
from gazette_core.broker.protocol import protocol_pb2 as pb

TIMEOUT = 1.0
NAME_KEYS = ("name", "prefix")  # `name:prefix` is `name` once the suffix is dropped.


def complete_selector(ctx: typer.Context, incomplete: str) -> list[str]:
    """Completions of a selector being typed (Typer's `autocompletion=` callback).

    Earlier clauses of `incomplete` (up to its last comma) are kept as typed;
    the last one is completed.
    """
    done, clause = _split_last_clause(incomplete)
    specs = journal_specs(ctx.params.get("broker"))
    return [done + text for text in clause_completions(clause, specs)
            if (done + text).startswith(incomplete)]


def _split_last_clause(text: str) -> tuple[str, str]:
    """`a=b, na` -> (`a=b, `, `na`): what is kept, and the clause to complete."""
    clause = text.rpartition(",")[2]
    last = clause.lstrip()
    return text[:len(text) - len(last)], last


def clause_completions(clause: str, specs: list[pb.JournalSpec]) -> list[str]:
    """Every completion of one selector clause, before filtering by what was typed."""
    key, equals, _ = clause.partition("=")
    if not equals:
        return [f"name={spec.name}" for spec in specs] + [f"{k}=" for k in _label_names(specs)]
    label = key.rstrip("!").removesuffix(":prefix")
    if label in NAME_KEYS:
        names = sorted(spec.name for spec in specs)
        if label == "prefix" or key.endswith(":prefix"):
            names = sorted({*_directories(names), *names})
        return [f"{key}={name}" for name in names]
    return [f"{key}={value}" for value in _label_values(specs, label)]


def _label_names(specs: list[pb.JournalSpec]) -> list[str]:
    return sorted({label.name for spec in specs for label in spec.labels.labels})


def _label_values(specs: list[pb.JournalSpec], name: str) -> list[str]:
    return sorted({label.value for spec in specs for label in spec.labels.labels
                   if label.name == name})


def _directories(names: list[str]) -> set[str]:
    """Every directory prefix of the journal names: a/b/c gives a/ and a/b/."""
    return {name[:i + 1] for name in names for i, char in enumerate(name) if char == "/"}


def journal_specs(flag: str | None) -> list[pb.JournalSpec]:
    """Every journal's spec, from the broker gazctl would use; none on any failure."""
    try:
        addresses = broker_addresses(flag or os.environ.get("BROKER_ADDRESS"))
        return run_interruptible(_list_specs(addresses))
    except Exception:  # An unreachable broker or a bad address: nothing to offer.
        return []


async def _list_specs(addresses: list[str]) -> list[pb.JournalSpec]:
    try:
        async with asyncio.timeout(TIMEOUT):
            # TLS files and auth from the environment and gazctl.ini (flags are not parsed yet).
            use_client_config(client_config())
            stub = journal_stub(await pick_live(addresses, TIMEOUT))
            resp = await list_journals(stub, pb.LabelSelector(), timeout=TIMEOUT)
        return [journal.spec for journal in resp.journals]
    finally:
        await close_channels()
