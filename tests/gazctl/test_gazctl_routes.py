"""`--broker.cache.size` and `--zone` against two brokers in two zones: where calls go.

With a route cache (size above 0) gazctl sends a read to a member of the
journal's route in its `--zone` (else the primary) and an append to the
primary; without one (Go's default, 0), every call goes to `--broker.address`,
which forwards it. `--log.level=debug` names the broker each routed call goes
to, and the content read or appended is checked through the library.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gazette_core.local.stack import Stack
from tests.gazctl.support import content, journals, ok, running_stack, wait_primaries

JOURNAL = "routes/both-zones"
SPEC = f"""\
name: {JOURNAL}
replication: 2
fragment:
  length: 1048576
  compression_codec: NONE
  stores: [file:///]
  refresh_interval: 10s
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, state_home: Path) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("stack"), brokers=2, zones=2) as s:
        yield s


@pytest.fixture(scope="module")
def route(stack: Stack) -> dict[str, str]:
    """zone -> the endpoint of the journal's member there, and "primary" -> the primary's."""
    address = stack.brokers[0].endpoint
    ok("journals", "apply", "--broker.address", address, input=SPEC)
    wait_primaries(address, f"name={JOURNAL}")
    ok("journals", "append", "-l", f"name={JOURNAL}", "--broker.address", address,
       input=b"hello\n")
    [listed] = journals(address, f"name={JOURNAL}")
    members = {m.zone: str(e) for m, e in zip(listed.route.members, listed.route.endpoints,
                                              strict=True)}
    assert len(members) == 2, listed.route  # one member in each zone
    return {**members, "primary": str(listed.route.endpoints[listed.route.primary])}


def _read(stack: Stack, *args: str) -> tuple[str, list[str]]:
    """stdout of a read of JOURNAL, and the brokers its reads were sent to."""
    result = ok("journals", "read", "-l", f"name={JOURNAL}", "--log.level=debug",
                "--broker.address", stack.brokers[0].endpoint, *args)
    prefix = f"debug: read of {JOURNAL} goes to "
    return result.stdout, [line.removeprefix(prefix) for line in result.stderr.splitlines()
                           if line.startswith(prefix)]


def test_without_a_route_cache_every_call_goes_to_the_given_broker(
        stack: Stack, route: dict[str, str]) -> None:
    out, routed = _read(stack, "--zone", "zone-b")
    assert out.startswith("hello\n") and routed == []


@pytest.mark.parametrize("zone", ["zone-a", "zone-b"])
def test_with_a_route_cache_reads_go_to_the_member_in_our_zone(
        zone: str, stack: Stack, route: dict[str, str]) -> None:
    out, routed = _read(stack, "--broker.cache.size=16", f"--zone={zone}")
    assert out.startswith("hello\n")
    assert routed and set(routed) == {route[zone]}


def test_with_a_route_cache_and_no_zone_of_ours_reads_go_to_the_primary(
        stack: Stack, route: dict[str, str]) -> None:
    for zone in ([], ["--zone", "zone-elsewhere"]):
        out, routed = _read(stack, "--broker.cache.size", "16", *zone)
        assert out.startswith("hello\n")
        assert routed and set(routed) == {route["primary"]}


def test_with_a_route_cache_appends_go_to_the_primary(stack: Stack,
                                                      route: dict[str, str]) -> None:
    other = next(b.endpoint for b in stack.brokers if b.endpoint != route["primary"])
    result = ok("journals", "--broker.cache.size=16", "--log.level=debug", "append", "-f",
                "lines", "-l", f"name={JOURNAL}", "--broker.address", other,
                "--zone", "zone-a", input=b"routed\n")
    assert f"debug: append of {JOURNAL} goes to {route['primary']}" in result.stderr
    assert content(stack.brokers[0].endpoint, JOURNAL).endswith(b"routed\n")
