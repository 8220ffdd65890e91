"""Helpers of the sink tests: target journals, and what read-committed readers see of them."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from gazette_core.broker.client.journals import fetch_write_head
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.message.committed import read_committed
from gazette_core.message.framing import content_type
from gazette_core.message.interfaces import CSVRecord, JSONRecord, Message
from tests.gazctl.support import ok, wait_primaries, with_broker

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
       input=f"name: {prefix}/\nreplication: 1\nfragment:\n  length: 65536\n  compression_codec: NONE\n  refresh_interval: 1m\n"
             "children:\n" + "".join(children))
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
