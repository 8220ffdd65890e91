"""A store keeping its state as JSON in `<dir>/state.json`, replaced by atomic rename.

The file holds three JSON documents, each followed by a newline
(docs/design/consumer.md#the-json-file-store):
the legacy map of journal to read-through offset, the user state, and the checkpoint.
State and checkpoint are in one file, so they commit together. A commit writes
`next.json` (opened with truncate, which also covers a leftover from a failed commit),
then renames it over `state.json`; both go through a RecordedDir on a worker thread.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Awaitable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from gazette_core.consumer.store.checkpoint_json import checkpoint_from_json, checkpoint_to_json
from gazette_core.consumer.store.interface import Checkpoint, Store
from gazette_core.consumer.store.recorded_dir import RecordedDir
from gazette_core.consumer.store.recording import LoopRecording, Recording
from gazette_core.errors import ValidationError

STATE_FILE = "state.json"
NEXT_FILE = "next.json"


class JSONFileStore(Store):
    """`state` is the user's JSON-able value; mutate it, then `start_commit`."""

    def __init__(self, files: RecordedDir, recording: LoopRecording, state: Any) -> None:
        self.files = files
        self.state = state
        self.checkpoint = Checkpoint()
        self._recording = recording
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="json-store")

    @classmethod
    async def open(
        cls, directory: str | Path, recording: Recording, initial_state: Any = None
    ) -> JSONFileStore:
        """Open the store in `directory`, reading `state.json` if it exists."""
        threaded = LoopRecording(recording, asyncio.get_running_loop())
        files = await asyncio.to_thread(RecordedDir, directory, threaded)
        store = cls(files, threaded, initial_state)
        content = await asyncio.to_thread(files.read_bytes, STATE_FILE)
        if content is not None:
            store.state, store.checkpoint = decode_state_file(content)
        return store

    async def restore_checkpoint(self) -> Checkpoint:
        restored = Checkpoint()
        restored.CopyFrom(self.checkpoint)
        return restored

    def start_commit(
        self, checkpoint: Checkpoint, wait_for: Awaitable[None] | None
    ) -> asyncio.Future[None]:
        content = encode_state_file(self.state, checkpoint)
        self.checkpoint.CopyFrom(checkpoint)
        first = self._recording.barrier(wait_for)
        work = asyncio.get_running_loop().run_in_executor(self._worker, self._write, content)
        return asyncio.ensure_future(_finish(first, work))

    def _write(self, content: bytes) -> Awaitable[None]:
        file = self.files.open(NEXT_FILE, create=True, truncate=True)
        try:
            file.write(content)
        finally:
            file.close()
        self.files.rename(NEXT_FILE, STATE_FILE)
        return self._recording.barrier(None)

    async def destroy(self) -> None:
        self._worker.shutdown(wait=True)
        await asyncio.to_thread(shutil.rmtree, self.files.root, True)


async def _finish(first: Awaitable[None], work: Awaitable[Awaitable[None]]) -> None:
    waited, final = await asyncio.gather(first, work, return_exceptions=True)
    if isinstance(final, BaseException):
        raise final
    if isinstance(waited, BaseException):
        asyncio.ensure_future(final).add_done_callback(
            lambda f: None if f.cancelled() else f.exception()
        )
        raise waited
    await final


def encode_state_file(state: Any, checkpoint: Checkpoint) -> bytes:
    offsets = {j: s.read_through for j, s in sorted(checkpoint.sources.items())}
    docs = (offsets, state, checkpoint_to_json(checkpoint))
    return b"".join(
        json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
        for doc in docs
    )


def decode_state_file(content: bytes) -> tuple[Any, Checkpoint]:
    """State and checkpoint; a legacy file without the checkpoint document is accepted."""
    docs = _documents(content.decode())
    if len(docs) < 2:
        raise ValidationError(STATE_FILE, f"holds {len(docs)} JSON documents, want 2 or 3")
    offsets, state = docs[0] or {}, docs[1]
    checkpoint = checkpoint_from_json(docs[2] if len(docs) > 2 else None)
    for journal, offset in offsets.items():
        checkpoint.sources[journal].read_through = int(offset)
    return state, checkpoint


def _documents(text: str) -> list[Any]:
    decoder = json.JSONDecoder()
    docs: list[Any] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            return docs
        try:
            doc, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise ValidationError(STATE_FILE, f"not valid JSON: {exc}") from exc
        docs.append(doc)
