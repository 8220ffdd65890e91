"""Helpers of the sink tests: target journals, and what read-committed readers see of them."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any
from uuid import UUID

from gazette_core.broker.client.journals import fetch_write_head
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.message.committed import read_committed
from gazette_core.message.framing import content_type
from gazette_core.message.interfaces import CSVRecord, JSONRecord, Message
from gazette_core.message.uuid import Flags, get_parts
from tests.gazctl.support import content, ok, wait_primaries, with_broker

JSON_TYPE, CSV_TYPE = "application/x-ndjson", "text/csv"


class Doc(JSONRecord):
    """A JSON message that keeps its whole document."""

    __slots__ = ("doc",)

    def load_json_dict(self, doc: dict[str, Any]) -> None:
        super().load_json_dict(doc)
        self.doc = doc


def new_message(spec: pb.JournalSpec) -> Message:
    return CSVRecord() if content_type(spec) == CSV_TYPE else Doc()


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
