"""`gazctl shards list --lag` during a fail-over: a primary consumer is gone.

consumer-2 is SIGKILLed while its Etcd lease (long here) still names it
primary of its shards, as in the seconds after a crash. Every shard is still
listed, the killed consumer's shards with their lag marked unreachable, and
it gets one warning line; only a listing where no lag could be measured fails.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from gazette_core.local.stack import Stack
from tests.gazctl.shards_support import CHUNKS, EXAMPLE_SHARDS, primary_of, shard_stack, shards
from tests.gazctl.support import cli, kill, run_main

# Far longer than the module runs: the killed consumer stays primary of its shards throughout.
LEASE_S = 600


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, state_home: Path) -> Iterator[Stack]:
    with shard_stack(tmp_path_factory.mktemp("lag-failover"), lease=LEASE_S) as s:
        kill(s.consumers[1])
        yield s


@pytest.fixture(scope="module")
def primaries(stack: Stack) -> dict[str, str]:
    """Each example shard's primary consumer, as routed while consumer-2 is dead."""
    by_shard = {shard.spec.id: primary_of(shard) for shard in shards(stack)}
    assert set(by_shard.values()) == {"consumer-1", "consumer-2"}, by_shard
    return by_shard


def _gone(primaries: dict[str, str]) -> list[str]:
    return [shard for shard in EXAMPLE_SHARDS if primaries[shard] == "consumer-2"]


def _warning(stack: Stack, gone: list[str], err: str) -> None:
    """The one warning line naming the killed consumer and its shards."""
    lines = err.splitlines()
    head = (f"warning: cannot reach consumer consumer-2 at {stack.consumers[1].endpoint}, "
            f"primary of {', '.join(gone)}: lag shown as <unreachable> (Shard Stat: UNAVAILABLE")
    assert len(lines) == 1 and lines[0].startswith(head), err


def test_every_shard_is_listed_with_the_unreachable_lags_marked(
        stack: Stack, primaries: dict[str, str]) -> None:
    done = cli("shards", "list", "--lag")

    assert done.exit_code == 0, done.stderr
    rows = {row.split()[0]: row.split()[-1] for row in done.stdout.splitlines()[1:]}
    assert rows == {**{shard: ("<unreachable>" if primaries[shard] == "consumer-2"
                               else f"{CHUNKS}/part-{shard[-3:]}:0")
                       for shard in EXAMPLE_SHARDS}, "total": ">=0"}
    _warning(stack, _gone(primaries), done.stderr)


def test_json_and_yaml_mark_the_unreachable_lags(stack: Stack,
                                                 primaries: dict[str, str]) -> None:
    as_json = cli("shards", "list", "--lag", "-o", "json")
    as_yaml = cli("shards", "list", "--lag", "-o", "yaml")

    assert (as_json.exit_code, as_yaml.exit_code) == (0, 0), (as_json.stderr, as_yaml.stderr)
    lags = {doc["spec"]["id"]: (doc["lag"], doc.get("lag_unknown"))
            for doc in json.loads(as_json.stdout)["shards"]}
    assert lags == {shard: ((None, "unreachable") if primaries[shard] == "consumer-2"
                            else ({f"{CHUNKS}/part-{shard[-3:]}": 0}, None))
                    for shard in EXAMPLE_SHARDS}
    comments = [line.strip() for line in as_yaml.stdout.splitlines() if "comment:" in line]
    assert comments == [("comment: 'lag: <unreachable>'" if primaries[shard] == "consumer-2"
                         else f"comment: 'lag: {CHUNKS}/part-{shard[-3:]}:0'")
                        for shard in EXAMPLE_SHARDS]
    _warning(stack, _gone(primaries), as_json.stderr)


def test_only_a_listing_without_any_lag_fails(stack: Stack, primaries: dict[str, str],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    gone = _gone(primaries)

    code, out, err = run_main(capsys, "shards", "list", "--lag", "-l", f"id={gone[0]}")

    assert code == 1
    assert [line.split() for line in out.splitlines()] == [
        ["ID", "Status", "Lag"], [gone[0], "PRIMARY", "<unreachable>"], ["total", ">=0"]]
    _warning(stack, [gone[0]], err.splitlines()[0])
    assert err.splitlines()[1:] == ["error: no shard's lag could be measured (unreachable: 1)"]
