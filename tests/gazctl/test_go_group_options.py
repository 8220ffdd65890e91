"""Go's group options of `gazctl journals` and `gazctl shards`, each in every Go spelling.

Go's gazctl hangs --zone, --log.level, --log.format and --broker.* (on shards
also --consumer.*) on the group, takes them before the subcommand and after
it, from their environment variables and from gazctl.ini. Each row gives one
option in all these ways (go_spellings.py) and checks its effect each time;
the broker verifies tokens, so the auth options show theirs. Consumer options
are checked against consumer addresses that refuse connections: the error,
or a debug line, shows the value was used. The consumer's route cache is
accepted for compatibility only, and its help says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import Result

from gazctl.usage import UsageError
from gazette_core.local import stack as local_stack
from gazette_core.local.stack import Stack
from gazette_core.server import auth
from tests.broker.auth_support import KEY, KEYS
from tests.gazctl.go_spellings import (
    GROUP_SPELLINGS,
    Case,
    Option,
    check_spellings,
    failed_with,
    printed,
    run_spelled,
    said,
)
from tests.gazctl.support import cli, command_tree, ok, stop_stack

SPECS = (b"name: grp/listed\nreplication: 1\nfragment:\n  length: 1024\n"
         b"  compression_codec: NONE\n  stores: [file:///]\n  refresh_interval: 1s\n")
LISTED = "name: grp/listed"
REFUSING = "http://127.0.0.1:9"  # discard port: connections are refused at once
HTTPS = "https://127.0.0.1:9"
LIST = ("journals", "list", "-l", "name=grp/listed", "-o", "yaml")
READ = ("journals", "read", "-l", "name=grp/listed")
SHARDS = ("shards", "list")
ADDRESS = "@address@"  # stands for the secured broker's endpoint, known once it runs
TOKEN = auth.mint(KEY, auth.ALL)


@pytest.fixture(scope="module")
def address(tmp_path_factory: pytest.TempPathFactory, state_home: Path) -> Iterator[str]:
    """A broker verifying tokens signed with KEYS, serving journal grp/listed."""
    directory = tmp_path_factory.mktemp("secured")
    try:
        stack: Stack = local_stack.up(directory, timeout=30, activate=False, auth_keys=KEYS)
        endpoint = stack.brokers[0].endpoint
        ok("journals", "apply", "--specs", "-", "--broker.address", endpoint,
           "--broker.auth-keys", KEYS, input=SPECS)
        yield endpoint
    finally:
        stop_stack(directory)


def broker(flag: str, value: str, field: str, section: str = "journals.Broker") -> Option:
    return Option(flag, value, section, field, env=flag[2:].upper().replace(".", "_")
                  .replace("-", "_"))


def consumer(flag: str, value: str, field: str) -> Option:
    return broker(flag, value, field, "shards.Consumer")


SECURED = {"BROKER_ADDRESS": ADDRESS, "BROKER_AUTH_KEYS": KEYS}
ROUTED = {**SECURED, "LOG_LEVEL": "debug", "BROKER_CACHE_SIZE": "3"}
CASES = [
    Case("broker address", broker("--broker.address", ADDRESS, "Address"), LIST,
         printed(LISTED), {"BROKER_AUTH_KEYS": KEYS}),
    Case("broker auth keys", broker("--broker.auth-keys", KEYS, "AuthKeys"), LIST,
         printed(LISTED), {"BROKER_ADDRESS": ADDRESS}),
    Case("broker auth token", broker("--broker.auth-token", TOKEN, "AuthToken"), LIST,
         printed(LISTED), {"BROKER_ADDRESS": ADDRESS}),
    Case("broker cert file", broker("--broker.cert-file", "/missing/c.pem", "CertFile"), LIST,
         failed_with("got certificate '/missing/c.pem', key ''"), {"BROKER_ADDRESS": HTTPS}),
    Case("broker cert key file",
         broker("--broker.cert-key-file", "/missing/k.pem", "CertKeyFile"), LIST,
         failed_with("got certificate '', key '/missing/k.pem'"), {"BROKER_ADDRESS": HTTPS}),
    Case("broker trusted CA file",
         broker("--broker.trusted-ca-file", "/missing/ca.pem", "TrustedCAFile"), LIST,
         failed_with("cannot read TLS CA file '/missing/ca.pem'"), {"BROKER_ADDRESS": HTTPS}),
    Case("broker route cache size", broker("--broker.cache.size", "7", "Size"), READ,
         said("debug: routing reads and appends through a cache of 7 journal routes"),
         {**ROUTED, "BROKER_CACHE_SIZE": ""}),
    Case("broker route cache ttl", broker("--broker.cache.ttl", "90s", "TTL"), READ,
         said("journal routes kept 90s"), ROUTED),
    Case("zone", Option("--zone", "zone-x", "journals", "Zone", env="ZONE"), READ,
         said("reads preferring zone 'zone-x'"), ROUTED),
    Case("log level", Option("--log.level", "debug", "journals.Logging", "Level",
                             env="LOG_LEVEL"), LIST,
         said(f"debug: using broker at {ADDRESS}", printed(LISTED)), SECURED),
    Case("log format", Option("--log.format", "json", "journals.Logging", "Format",
                              env="LOG_FORMAT"), LIST,
         lambda result: _json_lines(result, f"using broker at {ADDRESS}"),
         {**SECURED, "LOG_LEVEL": "debug"}),
    Case("consumer address", consumer("--consumer.address", REFUSING, "Address"), SHARDS,
         failed_with(f"cannot reach consumer at {REFUSING}")),
    Case("consumer auth keys", consumer("--consumer.auth-keys", "!!!", "AuthKeys"), SHARDS,
         failed_with("--consumer.auth-keys: auth key at index 0 is not valid base64"),
         {"CONSUMER_ADDRESS": REFUSING}),
    Case("consumer auth token", consumer("--consumer.auth-token", TOKEN, "AuthToken"), SHARDS,
         said("debug: consumer calls carry the pre-shared token of --consumer.auth-token"),
         {"CONSUMER_ADDRESS": REFUSING, "LOG_LEVEL": "debug"}),
    Case("consumer cert file", consumer("--consumer.cert-file", "/missing/c.pem", "CertFile"),
         SHARDS, failed_with("got certificate '/missing/c.pem', key ''"),
         {"CONSUMER_ADDRESS": HTTPS}),
    Case("consumer cert key file",
         consumer("--consumer.cert-key-file", "/missing/k.pem", "CertKeyFile"), SHARDS,
         failed_with("got certificate '', key '/missing/k.pem'"), {"CONSUMER_ADDRESS": HTTPS}),
    Case("consumer trusted CA file",
         consumer("--consumer.trusted-ca-file", "/missing/ca.pem", "TrustedCAFile"), SHARDS,
         failed_with("cannot read TLS CA file '/missing/ca.pem'"), {"CONSUMER_ADDRESS": HTTPS}),
    Case("consumer route cache size (compatibility only)",
         consumer("--consumer.cache.size", "5", "Size"), SHARDS,
         failed_with(f"cannot reach consumer at {REFUSING}"), {"CONSUMER_ADDRESS": REFUSING}),
    Case("consumer route cache ttl (compatibility only)",
         consumer("--consumer.cache.ttl", "30s", "TTL"), SHARDS,
         failed_with(f"cannot reach consumer at {REFUSING}"), {"CONSUMER_ADDRESS": REFUSING}),
    Case("shards log level", Option("--log.level", "debug", "shards.Logging", "Level",
                                    env="LOG_LEVEL"), SHARDS,
         said("debug: consumer calls carry no authorization"), {"CONSUMER_ADDRESS": REFUSING}),
    Case("shards log format", Option("--log.format", "json", "shards.Logging", "Format",
                                     env="LOG_FORMAT"), SHARDS,
         lambda result: _json_lines(result, "consumer calls carry no authorization"),
         {"CONSUMER_ADDRESS": REFUSING, "LOG_LEVEL": "debug"}),
]


def _json_lines(result: Result, message: str) -> None:
    """Every stderr line is a JSON log record, and one of them says `message`."""
    records = [json.loads(line) for line in result.stderr.splitlines()]
    assert {"level": "debug", "msg": message} in [
        {"level": r["level"], "msg": r["msg"]} for r in records], records


def _bound(case: Case, address: str) -> Case:
    """`case` with the secured broker's endpoint in place of ADDRESS."""
    def fill(text: str) -> str:
        return text.replace(ADDRESS, address)

    option = case.option
    filled = Option(option.flag, fill(option.value), option.section, option.field,
                    option.short, option.env)
    expect = case.expect

    def check(result: Result) -> None:
        # Checks name ADDRESS too: compare against output with the endpoint put back.
        result.stdout_bytes = result.stdout_bytes.replace(address.encode(), ADDRESS.encode())
        result.stderr_bytes = (result.stderr_bytes or b"").replace(address.encode(),
                                                                   ADDRESS.encode())
        expect(result)

    return Case(case.name, filled, case.command, check,
                {k: fill(v) for k, v in case.env.items() if v}, case.input)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_group_option_in_every_go_spelling(case: Case, address: str,
                                           monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    check_spellings(_bound(case, address), GROUP_SPELLINGS, monkeypatch, tmp_path)


def test_the_consumer_route_cache_is_documented_as_accepted_for_compatibility() -> None:
    for flag in ("--consumer.cache.size", "--consumer.cache.ttl"):
        params = [p for p in command_tree()["gazctl shards list"].params if flag in p.opts]
        assert "Accepted for compatibility with Go's gazctl; no effect" in params[0].help


# Go's options of each group
# (docs/design/gazctl.md#options-of-journals-and-shards), and a value each may take.
CONNECTION = ["address", "cert-file", "cert-key-file", "trusted-ca-file", "auth-keys",
              "auth-token", "cache.size", "cache.ttl"]
GO_GROUP_OPTIONS = {
    "journals": ["--zone", "--log.level", "--log.format",
                 *(f"--broker.{name}" for name in CONNECTION)],
    "shards": ["--zone", "--log.level", "--log.format",
               *(f"--{side}.{name}" for side in ("consumer", "broker") for name in CONNECTION)],
}
VALUES = {"--log.level": "warn", "--log.format": "text", "--broker.cache.size": "3",
          "--consumer.cache.size": "3", "--broker.cache.ttl": "1m",
          "--consumer.cache.ttl": "1m"}


@pytest.mark.parametrize("path", [p for p in command_tree() if p.split()[1] in ("journals",
                                                                                  "shards")])
def test_every_subcommand_takes_its_groups_options_before_and_after_it(path: str) -> None:
    group, sub = path.split()[1:]
    given = [f"{flag}={VALUES.get(flag, 'x')}" for flag in GO_GROUP_OPTIONS[group]]
    for args in ([group, *given, sub, "--help"], [group, sub, *given, "--help"]):
        result = cli(*args)
        assert result.exit_code == 0, (args, result.stderr, repr(result.exception))


def test_given_before_and_after_the_subcommand_the_later_one_wins(
        address: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROKER_AUTH_KEYS", KEYS)
    monkeypatch.setenv("BROKER_ADDRESS", REFUSING)
    assert LISTED in ok("journals", f"--broker.address={REFUSING}", *LIST[1:],
                        "--broker.address", address).stdout
    refused = cli("journals", f"--broker.address={address}", *LIST[1:],
                  f"--broker.address={REFUSING}")
    assert f"cannot reach broker at {REFUSING}" in str(refused.exception)
    # Before the subcommand is still the command line: it wins over the environment.
    assert LISTED in ok("journals", "--broker.address", address, *LIST[1:]).stdout


def test_a_bad_value_in_gazctl_ini_is_a_usage_error_naming_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    case = Case("bad level", Option("--log.level", "loud", "journals.Logging", "Level"),
                LIST, lambda result: None)
    result = run_spelled(case, "ini-field", monkeypatch, tmp_path)
    assert isinstance(result.exception, UsageError)  # exit code 2: nothing was done
    assert str(result.exception) == (
        f"--log.level: 'loud' (from {tmp_path / 'gazctl.ini'}) is not one of trace, debug, "
        "info, warn, error, fatal")
