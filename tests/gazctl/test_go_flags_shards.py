"""Every Go flag of `gazctl shards ...`, and the shards group's broker options, in Go's spellings.

As test_go_flags_journals.py does for journals: each row gives one flag in
every spelling go-flags takes (go_spellings.py) against real consumers
running the stream-sum example, and checks its effect each time. The group's
broker options (`--broker.address`, the route cache, `--zone`) are given
before and after the subcommand, by environment variable and in gazctl.ini's
`[shards.Broker]` and `[shards]`; `shards recover` shows the route cache and
zone it reads the recovery log with at debug level.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gazette_core.local.stack import Stack
from tests.gazctl.go_spellings import (
    GROUP_SPELLINGS,
    Case,
    Option,
    check_spellings,
    printed,
    said,
    usage_error,
)
from tests.gazctl.go_spellings import failed_with as failed
from tests.gazctl.shards_support import EXAMPLE, EXAMPLE_SHARDS, shard_stack, shard_yaml
from tests.gazctl.test_go_flags_journals import flag, flag_spellings, value_spellings

SHARD = "chunks-part-000"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, state_home: Path) -> Iterator[Stack]:
    with shard_stack(tmp_path_factory.mktemp("shards")) as s:
        yield s


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("inputs")
    # Revisions that are no shard's: each of two transactions of one shard is refused.
    (directory / "stale.yaml").write_text(shard_yaml(SHARD, "chunks-part-001", revision=999))
    return directory




def cases(stack: Stack, files: Path) -> dict[str, tuple[Case, list[str]]]:
    env = {"BROKER_ADDRESS": stack.brokers[0].endpoint,
           "CONSUMER_ADDRESS": stack.consumers[0].endpoint}
    rows: list[tuple[Case, list[str]]] = []

    def row(name: str, option: Option, command: tuple[str, ...], expect: Any,
            spellings: list[str] | None = None, extra_env: dict[str, str] | None = None,
            drop: tuple[str, ...] = ()) -> None:
        chosen = spellings or (flag_spellings if option.is_flag else value_spellings)(option)
        case_env = {k: v for k, v in {**env, **(extra_env or {})}.items() if k not in drop}
        rows.append((Case(name, option, command, expect, case_env), chosen))

    one = ("-l", f"id={SHARD}")
    listed = ("shards", "list", *one)
    row("list selector", Option("--selector", f"id={SHARD}", "shards.list", "Selector", "-l"),
        ("shards", "list"), printed(SHARD, absent=("chunks-part-001",)))
    row("list format", Option("--format", "yaml", "shards.list", "Format", "-o"), listed,
        printed("shards:", f"id: {SHARD}"))
    row("list label columns", Option("--label-columns", "store", "shards.list", "Labels", "-L"),
        listed, printed("store", "sqlite"))
    row("list primary", flag("--primary", "shards.list", "Primary", "-p"), listed,
        printed("Primary", ":PRIMARY"))
    row("list replicas", flag("--replicas", "shards.list", "Replicas", "-r"), listed,
        printed("Replicas"))
    row("list rf", flag("--rf", "shards.list", "RF"), listed, printed("RF"))
    row("list lag", flag("--lag", "shards.list", "Lag"), listed, printed("Lag"))

    specs = str(EXAMPLE / "shards.yaml")
    row("apply specs", Option("--specs", specs, "shards.apply", "SpecsPath"),
        ("shards", "apply", "--dry-run"), printed(f"{len(EXAMPLE_SHARDS)} unchanged"))
    row("apply dry run", flag("--dry-run", "shards.apply", "DryRun"),
        ("shards", "apply", "--specs", specs), printed("dry run: 0 change(s)"))
    row("apply max txn size", Option("--max-txn-size", "1", "shards.apply", "MaxTxnSize"),
        ("shards", "apply", "--specs", str(files / "stale.yaml")), failed("of 2 refused"))
    row("edit max txn size", Option("--max-txn-size", "-1", "shards.edit", "MaxTxnSize"),
        ("shards", "edit", *one), usage_error("Invalid value for '--max-txn-size'"))

    unassign = ("shards", "unassign", *one)
    row("unassign selector", Option("--selector", f"id={SHARD}", "shards.unassign", "Selector",
                                    "-l"), ("shards", "unassign", "--dry-run"),
        printed(f"would unassign {SHARD}"))
    row("unassign dry run", flag("--dry-run", "shards.unassign", "DryRun"), unassign,
        printed(f"would unassign {SHARD}"))
    row("unassign failed", flag("--failed", "shards.unassign", "Failed"),
        (*unassign, "--dry-run"), failed("no selected shard has a failed replica"))

    row("recover id", Option("--id", SHARD, "shards.recover", "ID"),
        ("shards", "recover", "-d", "dir"), said(f"recovered shard {SHARD} from "))
    row("recover dir", Option("--dir", "dir", "shards.recover", "Dir", "-d"),
        ("shards", "recover", "--id", SHARD), said(") into dir: "))

    row("prune selector", Option("--selector", f"id={SHARD}", "shards.prune", "Selector", "-l"),
        ("shards", "prune", "--dry-run"), said("dry run: nothing was deleted"))
    row("prune dry run", flag("--dry-run", "shards.prune", "DryRun"),
        ("shards", "prune", *one), said("dry run: nothing was deleted"))

    recover = ("shards", "recover", "--id", SHARD, "-d", "dir")
    debug = {"LOG_LEVEL": "debug"}
    broker = stack.brokers[0].endpoint
    row("group broker address", Option("--broker.address", broker, "shards.Broker", "Address",
                                       env="BROKER_ADDRESS"), (*listed, "--lag"), printed("Lag"),
        list(GROUP_SPELLINGS), drop=("BROKER_ADDRESS",))
    row("group broker route cache size", Option("--broker.cache.size", "7", "shards.Broker",
                                                "Size", env="BROKER_CACHE_SIZE"), recover,
        said("through a cache of 7 journal routes"), list(GROUP_SPELLINGS), debug)
    row("group broker route cache ttl", Option("--broker.cache.ttl", "90s", "shards.Broker",
                                               "TTL", env="BROKER_CACHE_TTL"), recover,
        said("journal routes kept 90s"), list(GROUP_SPELLINGS), debug)
    row("group zone", Option("--zone", "zone-x", "shards", "Zone", env="ZONE"), recover,
        said("reads preferring zone 'zone-x'"), list(GROUP_SPELLINGS), debug)
    return {case.name: (case, spellings) for case, spellings in rows}


def _names() -> list[str]:
    """The row names, known without a running stack."""
    class Fake:
        brokers = consumers = [type("P", (), {"endpoint": "http://x:1"})()]
    return list(cases(Fake(), Path("/x")))  # type: ignore[arg-type]


@pytest.mark.parametrize("name", _names())
def test_flag_in_every_go_spelling(name: str, stack: Stack, files: Path,
                                   monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    case, spellings = cases(stack, files)[name]
    check_spellings(case, spellings, monkeypatch, tmp_path)
