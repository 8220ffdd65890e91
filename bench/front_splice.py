"""The relay servers do not use, kept to be measured: kernel splicing in threads.

A drop-in alternative to gazette_core.server.relay (see bench/front_bench.py).

Each direction has its own thread, which moves bytes from one socket into a
pipe and from the pipe into the other socket with splice(2): the kernel
copies, the GIL is released while it does, and the event loop never sees
the bytes. A direction that reaches end of stream passes the half-close on
(shutdown for writing); an error in either direction shuts both sockets
down, which wakes the other thread. The sockets are closed once both
threads have left, so no thread ever blocks on a descriptor already reused.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import socket
import threading
from collections.abc import Callable

# Bytes one splice may move; the pipe between the two sockets is sized to hold them.
CHUNK = 1 << 20
DEFAULT_PIPE = 1 << 16


async def relay(client: socket.socket, upstream: socket.socket) -> None:
    """Relay until both directions have ended; cancelling tears the connection down.

    Both sockets belong to the relay from here on and are closed when it returns.
    """
    loop = asyncio.get_running_loop()
    left = asyncio.Event()
    pair = _Pair(client, upstream, lambda: loop.call_soon_threadsafe(left.set))
    try:
        pair.start()
        await left.wait()
    finally:
        pair.shutdown()
        # The threads leave at once after a shutdown; wait for that even when cancelled.
        while not pair.finished():
            with contextlib.suppress(asyncio.CancelledError):
                await left.wait()
        client.close()
        upstream.close()


class _Pair:
    """Two sockets and the two threads pumping between them."""

    def __init__(self, a: socket.socket, b: socket.socket,
                 on_finished: Callable[[], object]) -> None:
        self._a, self._b = a, b
        self._on_finished = on_finished
        self._lock = threading.Lock()
        self._running = 0
        self._shut = False

    def start(self) -> None:
        for sock in (self._a, self._b):
            sock.setblocking(True)
        for src, dst in ((self._a, self._b), (self._b, self._a)):
            thread = threading.Thread(target=self._pump, args=(src, dst), name="relay",
                                      daemon=True)
            with self._lock:
                self._running += 1
            try:
                thread.start()
            except RuntimeError:  # no thread to be had: the connection is refused
                with self._lock:
                    self._running -= 1
                raise

    def finished(self) -> bool:
        with self._lock:
            return self._running == 0

    def shutdown(self) -> None:
        """Wake both threads: each sees its source end, or its destination refuse."""
        with self._lock:
            if self._shut:
                return
            self._shut = True
        for sock in (self._a, self._b):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        r, w = os.pipe2(os.O_CLOEXEC)
        try:
            size = _grow(w)
            while n := os.splice(src.fileno(), w, size):
                while n:
                    n -= os.splice(r, dst.fileno(), n)
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)  # pass the half-close on
        except OSError:
            self.shutdown()  # a reset or a refusal ends the whole connection
        finally:
            os.close(r)
            os.close(w)
            self._left()

    def _left(self) -> None:
        with self._lock:
            self._running -= 1
            last = self._running == 0
        if last:
            with contextlib.suppress(RuntimeError):  # the loop is closing: nobody waits
                self._on_finished()


def _grow(pipe: int) -> int:
    """Enlarge `pipe` to CHUNK if the system allows it; the bytes it holds."""
    try:
        return fcntl.fcntl(pipe, fcntl.F_SETPIPE_SZ, CHUNK)
    except OSError:
        return DEFAULT_PIPE
