"""One timed playback, shared by the recovery-log benchmarks."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.consumer.recoverylog import recorded_op_pb2 as rpb
from gazette_core.consumer.recoverylog.player import Player
from gazette_core.consumer.recoverylog.progress import Progress


async def timed_play(stub: pb_grpc.JournalStub, hints: rpb.FSMHints, directory: Path
                     ) -> tuple[float, Progress]:
    """Seconds to play `hints` into `directory` to the write head, and the final progress.

    The directory is removed afterwards.
    """
    player = Player()
    player.finish_at_write_head()
    start = time.perf_counter()
    await player.play(hints, str(directory), stub)
    elapsed = time.perf_counter() - start
    shutil.rmtree(directory)
    return elapsed, player.progress
