"""Gazette's server flags and environment variables, as `gazette serve` and `gazette consumer`
parse them: each flag, its variable, Go's defaults and Go's duration text."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gazette_core.broker import config as broker
from gazette_core.consumer import config as consumer

SERVE_FLAGS = [
    # (flag, environment variable, value given, config field, value parsed)
    ("--broker.max-grpc-recv-size", "BROKER_MAX_GRPC_RECV_SIZE", "1048576",
     "max_grpc_recv_size", 1048576),
    ("--broker.watch-delay", "BROKER_WATCH_DELAY", "250ms", "watch_delay", 0.25),
    ("--broker.max-append-rate", "BROKER_MAX_APPEND_RATE", "1000", "max_append_rate", 1000),
    ("--broker.min-append-rate", "BROKER_MIN_APPEND_RATE", "4096", "min_append_rate", 4096),
    ("--etcd.cert-file", "ETCD_CERT_FILE", "/c.pem", "etcd_cert_file", "/c.pem"),
    ("--etcd.cert-key-file", "ETCD_CERT_KEY_FILE", "/k.pem", "etcd_cert_key_file", "/k.pem"),
    ("--etcd.trusted-ca-file", "ETCD_TRUSTED_CA_FILE", "/ca.pem", "etcd_trusted_ca_file",
     "/ca.pem"),
    ("--etcd.lease", "ETCD_LEASE_TTL", "1m30s", "etcd_lease", 90.0),
    ("--log.format", "LOG_FORMAT", "json", "log_format", "json"),
]
CONSUMER_FLAGS = [
    ("--consumer.max-grpc-recv-size", "CONSUMER_MAX_GRPC_RECV_SIZE", "1048576",
     "max_grpc_recv_size", 1048576),
    ("--consumer.watch-delay", "CONSUMER_WATCH_DELAY", "1s", "watch_delay", 1.0),
    ("--consumer.peer-cert-file", "CONSUMER_PEER_CERT_FILE", "/p.pem", "peer_cert_file",
     "/p.pem"),
    ("--consumer.peer-cert-key-file", "CONSUMER_PEER_CERT_KEY_FILE", "/pk.pem",
     "peer_cert_key_file", "/pk.pem"),
    ("--consumer.peer-ca-file", "CONSUMER_PEER_CA_FILE", "/pca.pem", "peer_ca_file",
     "/pca.pem"),
    ("--consumer.limit", "CONSUMER_LIMIT", "7", "limit", 7),
    ("--consumer.hint-interval", "CONSUMER_HINT_INTERVAL", "5m", "hint_interval", 300.0),
    ("--broker.auth-keys", "BROKER_AUTH_KEYS", "c2VjcmV0", "broker_auth_keys", "c2VjcmV0"),
    ("--broker.cache.size", "BROKER_CACHE_SIZE", "128", "broker_cache_size", 128),
    ("--broker.cache.ttl", "BROKER_CACHE_TTL", "30s", "broker_cache_ttl", 30.0),
    ("--broker.file-root", "BROKER_FILE_ROOT", "/mnt/fragments", "broker_file_root",
     "/mnt/fragments"),
    ("--etcd.cert-file", "ETCD_CERT_FILE", "/c.pem", "etcd_cert_file", "/c.pem"),
    ("--etcd.cert-key-file", "ETCD_CERT_KEY_FILE", "/k.pem", "etcd_cert_key_file", "/k.pem"),
    ("--etcd.trusted-ca-file", "ETCD_TRUSTED_CA_FILE", "/ca.pem", "etcd_trusted_ca_file",
     "/ca.pem"),
    ("--etcd.lease", "ETCD_LEASE_TTL", "45s", "etcd_lease", 45.0),
    ("--log.format", "LOG_FORMAT", "color", "log_format", "color"),
]
PARSERS = {"serve": broker.parse_args, "consumer": consumer.parse_args}
CASES = [("serve", *row) for row in SERVE_FLAGS] + [("consumer", *row) for row in CONSUMER_FLAGS]
IDS = [f"{c[0]} {c[1]}" for c in CASES]


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for row in SERVE_FLAGS + CONSUMER_FLAGS:
        monkeypatch.delenv(row[1], raising=False)
    monkeypatch.delenv("ETCD_LEASE", raising=False)


@pytest.mark.parametrize(("process", "flag", "env", "given", "field", "parsed"), CASES, ids=IDS)
def test_each_flag_parses(process: str, flag: str, env: str, given: str, field: str,
                          parsed: Any) -> None:
    assert getattr(PARSERS[process]([flag, given]), field) == parsed


@pytest.mark.parametrize(("process", "flag", "env", "given", "field", "parsed"), CASES, ids=IDS)
def test_each_flag_falls_back_to_its_environment_variable(
        monkeypatch: pytest.MonkeyPatch, process: str, flag: str, env: str, given: str,
        field: str, parsed: Any) -> None:
    monkeypatch.setenv(env, given)
    assert getattr(PARSERS[process]([]), field) == parsed


def test_go_defaults() -> None:
    serve, cons = broker.parse_args([]), consumer.parse_args([])
    assert (serve.max_grpc_recv_size, serve.watch_delay, serve.max_append_rate,
            serve.min_append_rate, serve.etcd_lease, serve.log_format) == (
        4194304, 0.03, 0, 65536, 20.0, "text")
    assert (cons.max_grpc_recv_size, cons.watch_delay, cons.limit, cons.broker_cache_size,
            cons.broker_cache_ttl, cons.etcd_lease, cons.log_format) == (
        4194304, 0.03, 32, 0, 60.0, 20.0, "text")


@pytest.mark.parametrize("process", PARSERS)
def test_the_older_etcd_lease_variable_still_counts_after_the_newer_one(
        monkeypatch: pytest.MonkeyPatch, process: str) -> None:
    monkeypatch.setenv("ETCD_LEASE", "7")
    assert PARSERS[process]([]).etcd_lease == 7.0
    monkeypatch.setenv("ETCD_LEASE_TTL", "9s")
    assert PARSERS[process]([]).etcd_lease == 9.0


@pytest.mark.parametrize(("argv", "message"), [
    (["--broker.watch-delay", "soon"], "argument --broker.watch-delay: invalid Duration "
                                       "value: 'soon'"),
    (["--broker.watch-delay=-1s"], "--broker.watch-delay -1s: must not be negative"),
    (["--etcd.lease", "500ms"], "--etcd.lease 500ms: an Etcd lease lasts at least 1s"),
    (["--broker.max-grpc-recv-size", "0"], "--broker.max-grpc-recv-size 0: not a gRPC "
                                           "message size (1 to 2147483647 bytes)"),
    (["--broker.max-append-rate=-5"], "--broker.max-append-rate -5: must not be negative"),
    (["--log.format", "xml"], "--log.format 'xml': unknown log format (json, text, color)"),
])
def test_values_that_cannot_work_are_usage_errors(
        capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        broker.parse_args(argv)
    assert exit_.value.code == 2
    assert capsys.readouterr().err == f"gazette serve: error: {message}\n"


def test_a_bad_duration_in_the_environment_is_named(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("BROKER_CACHE_TTL", "a while")
    with pytest.raises(SystemExit):
        consumer.parse_args([])
    assert capsys.readouterr().err == (
        "gazette consumer: error: $BROKER_CACHE_TTL must be a duration (like 30ms, 20s or "
        "1h30m), not 'a while'\n")


# Gazette's flags and variables of each process (those served by this part of the code).
GO_SERVE = ["--broker.zone", "--broker.id", "--broker.host", "--broker.port",
            "--broker.server-cert-file", "--broker.server-cert-key-file",
            "--broker.server-ca-file", "--broker.peer-cert-file",
            "--broker.peer-cert-key-file", "--broker.peer-ca-file",
            "--broker.max-grpc-recv-size", "--broker.limit", "--broker.file-root",
            "--broker.file-only", "--broker.max-append-rate", "--broker.max-replication",
            "--broker.min-append-rate", "--broker.watch-delay", "--broker.auth-keys",
            "--broker.auto-suspend", "--etcd.address", "--etcd.cert-file",
            "--etcd.cert-key-file", "--etcd.trusted-ca-file", "--etcd.lease", "--etcd.prefix",
            "--log.level", "--log.format"]
GO_CONSUMER = ["--consumer.zone", "--consumer.id", "--consumer.host", "--consumer.port",
               "--consumer.server-cert-file", "--consumer.server-cert-key-file",
               "--consumer.server-ca-file", "--consumer.peer-cert-file",
               "--consumer.peer-cert-key-file", "--consumer.peer-ca-file",
               "--consumer.max-grpc-recv-size", "--consumer.limit",
               "--consumer.max-hot-standbys", "--consumer.watch-delay", "--consumer.auth-keys",
               "--broker.address", "--broker.cert-file", "--broker.cert-key-file",
               "--broker.trusted-ca-file", "--broker.auth-keys", "--broker.auth-token",
               "--broker.cache.size", "--broker.cache.ttl", "--broker.file-root",
               "--etcd.address", "--etcd.cert-file", "--etcd.cert-key-file",
               "--etcd.trusted-ca-file", "--etcd.lease", "--etcd.prefix", "--log.level",
               "--log.format"]


def _env_of(flag: str) -> str:
    """Gazette's variable of a flag: --etcd.lease is ETCD_LEASE_TTL, the rest by their name."""
    if flag == "--etcd.lease":
        return "ETCD_LEASE_TTL"
    return flag[2:].upper().replace(".", "_").replace("-", "_")


@pytest.mark.parametrize(("process", "go_flags", "table"), [
    ("serve", GO_SERVE, broker.FLAGS), ("consumer", GO_CONSUMER, consumer.FLAGS)])
def test_help_lists_every_flag_with_its_environment_variable(
        process: str, go_flags: list[str], table: list[Any]) -> None:
    done = subprocess.run([sys.executable, "-m", "gazette_core", process, "--help"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    for flag in go_flags:
        row = next(r for r in table if r[0] == flag)
        assert _env_of(flag) in row[3].split(","), (flag, row[3])
    for flag, _, _, env, _ in table:
        names = ", ".join(f"${e}" for e in env.split(","))
        assert f"{flag} " in text and f"[{names}]" in text, flag


def test_the_docs_name_every_flag() -> None:
    docs = Path(__file__).resolve().parents[2] / "docs"
    text = "".join((docs / name).read_text()
                   for name in ("configuration.md", "operations.md", "consumers.md"))
    missing = [row[0] for row in broker.FLAGS + consumer.FLAGS if f"`{row[0]}" not in text]
    assert missing == []
