"""Journal content survives a graceful restart of the local stack.

`down` SIGTERMs brokers, which persist their spools to the `file://` store
under DIR/fragments before exiting; the next `up` recovers the journals from
those files and appends continue at the old write head.
"""

from __future__ import annotations

import gzip
import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from gazette_core.local import stack as local_stack
from tests.gazctl.support import ok, running_stack, wait_primaries

SPECS = """\
name: durable/
replication: 1
fragment:
  length: 1048576
  compression_codec: NONE
  stores:
    - file:///
  refresh_interval: 1s
children:
  - name: durable/gzipped
    revision: 0
    fragment:
      compression_codec: GZIP
  - name: durable/plain
    revision: 0
"""
NAME = re.compile(r"([0-9a-f]{16})-([0-9a-f]{16})-([0-9a-f]{40})\.(raw|gz)")


@pytest.fixture(scope="module")
def stack_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    directory = tmp_path_factory.mktemp("durable")
    with running_stack(directory):
        yield directory


def _append(address: str, journal: str, data: bytes) -> str:
    return ok("journals", "append", "-l", f"name={journal}", "--broker.address", address,
              input=data).stdout


def _stored(directory: Path) -> bytes:
    """A journal's content reassembled from its fragment files, checking their names."""
    content, head = b"", 0
    for path in sorted(directory.iterdir()):
        match = NAME.fullmatch(path.name)
        assert match, path.name
        begin, end = int(match.group(1), 16), int(match.group(2), 16)
        raw = path.read_bytes()
        data = gzip.decompress(raw) if match.group(4) == "gz" else raw
        assert begin == head and end - begin == len(data), path.name
        assert hashlib.sha1(data).hexdigest() == match.group(3)
        content, head = content + data, end
    return content


def test_graceful_restart_keeps_content_and_the_write_head(stack_dir: Path) -> None:
    stack = local_stack.Stack.load(stack_dir)
    assert stack is not None
    address = stack.brokers[0].endpoint
    ok("journals", "apply", "--broker.address", address, input=SPECS)
    wait_primaries(address, "prefix=durable/")
    written = {"durable/plain": b"", "durable/gzipped": b""}
    for n in range(3):
        for journal in written:
            data = f"{journal} record {n}\n".encode() * (n + 1)
            _append(address, journal, data)
            written[journal] += data

    fragments = stack_dir / "fragments" / "durable"
    # The latest appends sit in the broker's spool: only shutdown persists them.
    persisted = _stored(fragments / "plain") if (fragments / "plain").exists() else b""
    assert len(persisted) < len(written["durable/plain"])

    assert local_stack.down(stack_dir) == [("broker-1", True), ("etcd", True)]

    assert _stored(fragments / "plain") == written["durable/plain"]
    assert _stored(fragments / "gzipped") == written["durable/gzipped"]
    assert {p.suffix for p in (fragments / "gzipped").iterdir()} == {".gz"}

    local_stack.up(stack_dir, timeout=30, activate=False)

    for journal, data in written.items():
        read = ok("journals", "read", "-l", f"name={journal}", "--broker.address", address)
        assert read.stdout_bytes == data
    head = len(written["durable/plain"])
    assert _append(address, "durable/plain", b"after restart\n") == (
        f"appended 14 bytes to durable/plain at offsets [{head}, {head + 14})\n")
    read = ok("journals", "read", "-l", "name=durable/plain", "--broker.address", address)
    assert read.stdout_bytes == written["durable/plain"] + b"after restart\n"
