"""Stores: where a consumer shard keeps its state, committed together with its read offsets.

An embedded store keeps its files in a local directory and records every change to them
through a recovery-log recorder (`gazette_core.consumer.recoverylog`), so another process
can rebuild the directory by playing the log back. The stores here speak to the recorder
only through the `Recording` protocol, and do their file I/O on a worker thread
(`LoopRecording` carries their record calls back to the event loop in order).

- `RecordedDir`: a small file API whose every mutation is also recorded.
- `SQLiteStore`: SQLite (apsw) on a VFS recording the database, journal and WAL files,
  with the checkpoint in a table of the same database.
- `JSONFileStore`: a JSON state document plus checkpoint, replaced by atomic rename.

All of them implement `Store`, which the consumer framework drives once per transaction:
`start_commit(checkpoint, wait_for)` commits state and checkpoint atomically behind
`wait_for`; `restore_checkpoint()` returns the last committed checkpoint.
"""

from gazette_core.consumer.store.interface import Checkpoint, Store
from gazette_core.consumer.store.recording import FileRecording, LoopRecording, Recording

__all__ = ["Checkpoint", "FileRecording", "LoopRecording", "Recording", "Store"]
