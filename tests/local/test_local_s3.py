"""`gazctl local up --s3`: a moto S3 emulator as a stack process, journals persisting to its
bucket, `gazctl local env`, prune deleting from the bucket, and `local down` stopping it.

The module shares one stack started by `gazctl local up --s3`; the last test stops it.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from gazette_core.local import processes
from gazette_core.local import s3 as local_s3
from gazette_core.local.stack import Stack
from tests.gazctl.support import gazctl, isolated_env, stop_stack

APPENDS = [bytes([ord("a") + n]) * 800 for n in range(4)]
# Four 800-byte appends over 1 KiB fragments: two persisted fragments
# (0-800, 800-2400) and one still in the spool (2400-3200).
PERSISTED = [(0, 800), (800, 2400)]


def _ok(*args: str, env: dict[str, str], input: bytes | None = None) -> str:
    proc = gazctl(*args, env=env, input=input, timeout=180)
    assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc.stdout.decode()


def _specs(store: str) -> bytes:
    return f"""\
name: s3/
replication: 1
labels:
  - name: suite
    value: s3
fragment:
  length: 1024
  compression_codec: GZIP
  stores:
    - "{store}"
  refresh_interval: 1s
children:
  - name: s3/kept
    revision: 0
    fragment:
      retention: 24h
  - name: s3/pruned
    revision: 0
    fragment:
      retention: 1s
""".encode()


@pytest.fixture(scope="module")
def stack_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("local-s3")


@pytest.fixture(scope="module")
def env(state_home: Path) -> dict[str, str]:
    return isolated_env(state_home)


@pytest.fixture(scope="module")
def up_output(stack_dir: Path, env: dict[str, str]) -> Iterator[str]:
    """What `gazctl local up --dir D --s3` printed; the stack is torn down after the module."""
    try:
        yield _ok("local", "up", "--dir", str(stack_dir), "--s3", env=env)
    finally:
        stop_stack(stack_dir)


def _loaded(stack_dir: Path) -> Stack:
    stack = Stack.load(stack_dir)
    assert stack is not None
    return stack


def _keys(endpoint: str, journal: str) -> list[str]:
    listed = local_s3.client(endpoint).list_objects_v2(
        Bucket=local_s3.BUCKET, Prefix=f"{local_s3.PREFIX}/{journal}/")
    return sorted(obj["Key"] for obj in listed.get("Contents", ()))


def test_up_starts_the_emulator_as_a_stack_process(up_output: str, stack_dir: Path) -> None:
    stack = _loaded(stack_dir)
    etcd, s3, broker = stack.etcd, stack.s3, stack.brokers[0]
    assert s3 is not None
    store = (f"s3://gazette-local/fragments/?endpoint="
             f"{quote(f'http://127.0.0.1:{s3.port}', safe='')}")

    assert up_output == (f"local stack running in {stack_dir}\n"
                         f"  etcd       pid {etcd.pid:<8} {etcd.endpoint}\n"
                         f"  s3         pid {s3.pid:<8} {s3.endpoint}\n"
                         f"  broker-1   pid {broker.pid:<8} {broker.endpoint}\n"
                         f"fragments are stored under {stack_dir / 'fragments'} "
                         "(store URL file:///)\n"
                         f"or in S3: {store} (see `gazctl local env`)\n")
    # The gazctl command has exited; the emulator it started runs on.
    assert processes.alive(s3.pid, "moto.server")
    assert stack.s3_store == store
    assert local_s3.client(s3.endpoint).head_bucket(Bucket="gazette-local")[
        "ResponseMetadata"]["HTTPStatusCode"] == 200
    assert (stack_dir / "logs" / "s3.log").exists()


def test_env_prints_the_store_url_and_credentials(up_output: str, stack_dir: Path,
                                                  env: dict[str, str]) -> None:
    stack = _loaded(stack_dir)

    out = _ok("local", "env", "--dir", str(stack_dir), env=env)

    assert out == (f"export BROKER_ADDRESS={stack.brokers[0].endpoint}\n"
                   f"export ETCD_ADDRESS={stack.etcd.endpoint}\n"
                   f"export BROKER_FILE_ROOT={stack.directory / 'fragments'}\n"
                   f"export GAZETTE_S3_STORE='{stack.s3_store}'\n"
                   "export AWS_ACCESS_KEY_ID=testing\n"
                   "export AWS_SECRET_ACCESS_KEY=testing\n"
                   "export AWS_DEFAULT_REGION=us-east-1\n"
                   "export AWS_EC2_METADATA_DISABLED=true\n")


def test_journals_on_the_store_persist_to_the_bucket(up_output: str, stack_dir: Path,
                                                     env: dict[str, str]) -> None:
    stack = _loaded(stack_dir)
    assert stack.s3 is not None and stack.s3_store is not None
    _ok("journals", "apply", env=env, input=_specs(stack.s3_store))
    for name in ("kept", "pruned"):
        for data in APPENDS:
            _ok("journals", "append", "-l", f"name=s3/{name}", env=env, input=data)

    deadline = time.monotonic() + 60
    while [len(_keys(stack.s3.endpoint, f"s3/{n}")) for n in ("kept", "pruned")] != [2, 2]:
        assert time.monotonic() < deadline, "fragments were not persisted to the bucket"
        time.sleep(0.1)

    client = local_s3.client(stack.s3.endpoint)
    content = b"".join(APPENDS)
    for key in _keys(stack.s3.endpoint, "s3/kept"):
        begin, end = int(key.split("/")[-1][:16], 16), int(key.split("/")[-1][17:33], 16)
        assert (begin, end) in PERSISTED
        body = client.get_object(Bucket=local_s3.BUCKET, Key=key)["Body"].read()
        assert gzip.decompress(body) == content[begin:end]
    assert _ok("journals", "read", "-l", "name=s3/kept", env=env) == content.decode()


def test_curl_reads_a_journal_on_the_store_through_the_gateway(
        up_output: str, stack_dir: Path, tmp_path: Path) -> None:
    gateway = _loaded(stack_dir).brokers[0].http
    assert gateway is not None
    headers = tmp_path / "headers"

    # Persisted fragments come from the bucket, the rest from the broker's spool.
    proc = subprocess.run(["curl", "-sS", "-D", str(headers), f"{gateway}/s3/kept?offset=0"],
                          capture_output=True, timeout=60, check=True)

    lines = headers.read_bytes().splitlines()
    assert lines[0] == b"HTTP/1.1 206 Partial Content"
    assert b"X-Write-Head: 3200" in lines
    assert b"X-Close-Error: OFFSET_NOT_YET_AVAILABLE" in lines  # the trailer: read to the head
    assert proc.stdout == b"".join(APPENDS)


def test_prune_deletes_expired_fragments_from_the_bucket(up_output: str, stack_dir: Path,
                                                         env: dict[str, str]) -> None:
    stack = _loaded(stack_dir)
    assert stack.s3 is not None
    kept = _keys(stack.s3.endpoint, "s3/kept")
    # Retention of s3/pruned is 1s: wait until its fragments are at least that old.
    listed = _ok("journals", "fragments", "-l", "name=s3/pruned", "-o", "json", env=env)
    newest = max(int(json.loads(line)["spec"].get("modTime", 0))
                 for line in listed.splitlines())
    while time.time() < newest + 1.5:
        time.sleep(0.1)

    # Executors delete with the credentials `gazctl local env` exports.
    out = _ok("journals", "prune", "-l", "suite=s3", "--format", "json",
              env={**env, **local_s3.ENV})

    assert json.loads(out) == {
        "journals": 2, "journals_skipped": 0, "fragments": 6, "fragments_unpersisted": 2,
        "fragments_pruned": 2, "already_gone": 0, "fragments_kept": 4, "permission_denied": 0,
        "failed": 0, "bytes_total": 6400, "bytes_pruned": 2400, "bytes_already_gone": 0,
        "bytes_kept": 4000, "dry_run": False,
        "skipped_journals": [], "errors": []}
    assert _keys(stack.s3.endpoint, "s3/pruned") == []
    assert _keys(stack.s3.endpoint, "s3/kept") == kept


def test_down_stops_the_emulator_after_the_brokers(up_output: str, stack_dir: Path,
                                                   env: dict[str, str]) -> None:
    stack = _loaded(stack_dir)
    assert stack.s3 is not None

    out = _ok("local", "down", "--dir", str(stack_dir), env=env)

    assert out == "stopped broker-1\nstopped s3\nstopped etcd\n"
    assert not processes.alive(stack.s3.pid, stack.s3.marker)
