"""A SQLite store recorded into a recovery log, then rebuilt elsewhere from its hints.

Usage: python docs/examples/recorded_sqlite.py [BROKER_ADDRESS]
(default: $BROKER_ADDRESS, which `gazctl local env` exports, else
http://localhost:8080; start a broker with `gazctl local up`).
"""

import asyncio
import sys
import tempfile
from pathlib import Path

import grpc

from gazette_core.broker.client.appender import append_retrying
from gazette_core.broker.client.channel import default_address, grpc_target
from gazette_core.broker.client.journals import apply_journals
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.consumer.recoverylog.author import new_author
from gazette_core.consumer.recoverylog.fsm import FSM
from gazette_core.consumer.recoverylog.hints import decode_hints, encode_hints
from gazette_core.consumer.recoverylog.player import Player
from gazette_core.consumer.recoverylog.recorder import Recorder
from gazette_core.consumer.store.interface import Checkpoint
from gazette_core.consumer.store.sqlite import SQLiteStore

LOG = "examples/recovery/counter"


async def main(address: str, work: Path) -> None:
    async with grpc.aio.insecure_channel(grpc_target(address)) as channel:
        client = pb_grpc.JournalStub(channel)
        spec = pb.JournalSpec(name=LOG, replication=1)
        spec.fragment.length = 1 << 26
        spec.fragment.compression_codec = pb.NONE
        spec.fragment.stores.append("file:///")
        spec.fragment.refresh_interval.seconds = 60
        await apply_journals(client, pb.ApplyRequest(changes=[
            pb.ApplyRequest.Change(upsert=spec, expect_mod_revision=-1)]))
        await append_retrying(client, LOG, b"")  # Waits until a broker serves it.

        # Process one: record a store's directory into the log.
        first = work / "first"
        recorder = await Recorder.start(LOG, FSM(), new_author(), str(first), client)
        store = await SQLiteStore.open(
            first, recorder, bootstrap_sql="CREATE TABLE IF NOT EXISTS hits (n INTEGER)")
        for n in range(1, 101):
            await store.execute("INSERT INTO hits VALUES (?)", (n,))
            checkpoint = Checkpoint()
            checkpoint.sources["examples/input"].read_through = n * 10
            await store.start_commit(checkpoint, None)  # State and offsets, together.
        hints = encode_hints(await recorder.build_hints())  # Kept in Etcd by a consumer.
        await store.close()
        await recorder.stop()

        # Process two, after losing `first`: play the log from the hints, and at its
        # write head claim it for a new author (fencing out process one, were it alive).
        author = new_author()
        player = Player()
        player.inject_handoff(author)
        resolved = await player.play(decode_hints(hints), str(work / "second"), client)
        print(f"played {player.progress.bytes_read} bytes of {LOG}")
        recorder = await Recorder.start(LOG, resolved.fsm, author, resolved.directory, client)
        store = await SQLiteStore.open(resolved.directory, recorder)
        rows = await store.execute("SELECT count(*), sum(n) FROM hits")
        restored = await store.restore_checkpoint()
        print("rows, sum:", rows[0], "read through:",
              restored.sources["examples/input"].read_through)
        await store.close()
        await recorder.stop()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else default_address(), Path(tmp)))
