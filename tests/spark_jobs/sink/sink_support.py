"""Helpers of the sink tests: target journals, and what read-committed readers see of them."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from gazette_core.broker.client.journals import fetch_write_head
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.local import stack as local_stack
from gazette_core.message.committed import read_committed
from gazette_core.message.framing import content_type
from gazette_core.message.interfaces import CSVRecord, JSONRecord, Message
from gazette_core.message.uuid import Flags, get_parts
from spark_jobs.datasource import register
from spark_jobs.session import get_session, stop_session
from tests.gazctl.support import (
    content,
    isolated_state_home,
    ok,
    stop_stack,
    wait_primaries,
    with_broker,
)

JSON_TYPE, CSV_TYPE = "application/x-ndjson", "text/csv"


class Doc(JSONRecord):
    """A JSON message that keeps its whole document."""

    __slots__ = ("doc",)

    def load_json_dict(self, doc: dict[str, Any]) -> None:
        super().load_json_dict(doc)
        self.doc = doc


def new_message(spec: pb.JournalSpec) -> Message:
    return CSVRecord() if content_type(spec) == CSV_TYPE else Doc()


@contextmanager
def sink_stack(tmp_path_factory: pytest.TempPathFactory, prefix: str,
               journals: dict[str, str]) -> Iterator[str]:
    """A local stack holding `apply_journals(prefix, journals)`; yields its broker's address.

    Afterwards the process's Spark session stops first, then the stack.
    """
    directory = tmp_path_factory.mktemp(f"{prefix}-stack")
    with isolated_state_home(tmp_path_factory.mktemp("state")):
        try:
            address = local_stack.up(directory, timeout=60, activate=False).brokers[0].endpoint
            apply_journals(address, prefix, journals)
            yield address
        finally:
            stop_session()
            stop_stack(directory)


def sink_session(master: str, app_name: str) -> Any:
    """The process's Spark session on `master`, with the gazette format registered."""
    session = get_session(master, app_name=app_name)
    register(session)
    return session


def apply_journals(address: str, prefix: str, journals: dict[str, str]) -> None:
    """Journals `prefix/<name>` with the given content types ("" for none)."""
    children = []
    for name, kind in sorted(journals.items()):
        labels = f"      - name: content-type\n        value: {kind}\n" if kind else ""
        children.append(f"  - name: {prefix}/{name}\n    labels:\n"
                        f"      - name: sink\n        value: {prefix}\n{labels}")
    ok("journals", "apply", "--broker.address", address,
       input=f"name: {prefix}/\nreplication: 1\nfragment:\n  length: 65536\n"
             "  compression_codec: NONE\n  refresh_interval: 1m\nchildren:\n"
             + "".join(children))
    wait_primaries(address, f"sink={prefix}")


def committed(address: str, journal: str) -> list[Any]:
    """The committed messages of `journal` as read_committed() hands them out:
    JSON documents without their uuid, or CSV fields after the UUID."""
    async def read(stub: Any) -> list[Any]:
        out: list[Any] = []
        async for env in read_committed(stub, journal, new_message, block=False):
            msg = env.message
            if isinstance(msg, CSVRecord):
                out.append(list(msg[1:]))
            else:
                assert isinstance(msg, Doc)
                out.append({k: v for k, v in msg.doc.items() if k != "uuid"})
        return out

    return with_broker(address, read)


def write_head(address: str, journal: str) -> int:
    return with_broker(address, lambda stub: fetch_write_head(stub, journal))


def wait_for(predicate: Any, what: str, limit: float = 60) -> None:
    """Poll until `predicate()` holds (a state the test waits for, not a delay)."""
    deadline = time.monotonic() + limit
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def gate(path: str) -> None:
    """Block (in a Spark task) until the test creates `path`."""
    while not Path(path).exists():
        time.sleep(0.05)


def records(address: str, journal: str) -> list[bytes]:
    """Every record of a JSON journal, committed or not (ACKs included)."""
    return content(address, journal).splitlines()


def rolled_back(lines: list[bytes]) -> dict[str, bool]:
    """Per producer of `lines` (JSON records): whether an ACK below its first clock follows."""
    first: dict[str, int] = {}
    rolled: dict[str, bool] = {}
    for line in lines:
        u = UUID(json.loads(line)["uuid"])
        clock, flags, producer = get_parts(u)
        pid = producer.hex()
        if flags == Flags.CONTINUE_TXN:
            first.setdefault(pid, clock)
            rolled.setdefault(pid, False)
        elif flags == Flags.ACK_TXN and pid in first:
            rolled[pid] = clock < first[pid]
    return rolled


def kill_clients_of(port: int) -> list[int]:
    """SIGKILL the PySpark worker processes with a TCP connection to local `port` (a sink
    task appending to the broker there, as when its executor dies); their pids."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[2].rsplit(":", 1)[1], 16) == port and fields[3] == "01":
                inodes.add(f"socket:[{fields[9]}]")
    killed = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if b"pyspark" not in (proc / "cmdline").read_bytes():
                continue
            if any(os.readlink(fd) in inodes for fd in (proc / "fd").iterdir()):
                os.kill(int(proc.name), signal.SIGKILL)
                killed.append(int(proc.name))
        except OSError:
            continue
    return killed
