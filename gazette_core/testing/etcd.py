"""A real etcd server run as a subprocess on loopback ports, for tests and demos.

Each server gets its own temporary data directory and free client and peer
ports, so several can run side by side and nothing leaks between sessions.
Given `EtcdTLS` files it serves https and requires client certificates its CA
signed; its health is then checked on a separate plain-http metrics port.
"""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from gazette_core.errors import UnavailableError

ETCD_BINARY = "etcd"
HOST = "127.0.0.1"
EPHEMERAL_RANGE = "/proc/sys/net/ipv4/ip_local_port_range"


def free_port() -> int:
    """A TCP port on loopback that was free when asked.

    It is drawn from below the kernel's ephemeral range: a process the local
    stack restarts binds the same port again, and a port inside that range can
    meanwhile be taken as the source port of any outgoing connection.
    """
    low, high = _listen_range()
    for _ in range(200):
        port = random.randint(low, high)
        if port not in _handed_out and _bindable(port):
            _handed_out.add(port)
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))  # a crowded range: let the OS pick
        return int(sock.getsockname()[1])


_handed_out: set[int] = set()


def _listen_range() -> tuple[int, int]:
    try:
        first_ephemeral = int(Path(EPHEMERAL_RANGE).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        first_ephemeral = 32768
    high = max(first_ephemeral - 1, 2048)
    return max(1024, high - 12000), high


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
        return True


@dataclass(frozen=True)
class EtcdTLS:
    """PEM files of an etcd serving https: its certificate and key, and the CA of its clients."""

    cert_file: str
    key_file: str
    client_ca_file: str


class EtcdServer:
    """An etcd subprocess serving on `endpoint` until `stop()`."""

    def __init__(self, binary: str = ETCD_BINARY, start_timeout: float = 30.0,
                 tls: EtcdTLS | None = None) -> None:
        self._binary = binary
        self._start_timeout = start_timeout
        self._tls = tls
        self.metrics_port = 0
        self._dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: Path | None = None
        self.client_port = 0
        self.peer_port = 0

    @property
    def endpoint(self) -> str:
        """Client URL, e.g. "http://127.0.0.1:23790" (https with TLS)."""
        return f"{'https' if self._tls else 'http'}://{HOST}:{self.client_port}"

    @property
    def pid(self) -> int:
        """The etcd process's id (to freeze it with SIGSTOP, say)."""
        assert self._proc is not None, "etcd is not running"
        return self._proc.pid

    def start(self) -> EtcdServer:
        """Launch etcd and block until it answers its health check."""
        self._dir = Path(tempfile.mkdtemp(prefix="gazette-etcd-"))
        self._log = self._dir / "etcd.log"
        self.client_port, self.peer_port = free_port(), free_port()
        if self._tls is not None:
            self.metrics_port = free_port()
        self._launch()
        return self

    def restart(self) -> EtcdServer:
        """SIGKILL etcd if it runs, then start it again on its ports and data."""
        self.kill()
        self._launch()
        return self

    def _launch(self) -> None:
        assert self._dir is not None and self._log is not None
        peer = f"http://{HOST}:{self.peer_port}"
        args = [
            self._binary,
            "--name", "gazette-test",
            "--data-dir", str(self._dir / "data"),
            "--listen-client-urls", self.endpoint,
            "--advertise-client-urls", self.endpoint,
            "--listen-peer-urls", peer,
            "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"gazette-test={peer}",
            "--initial-cluster-state", "new",  # ignored once the data dir holds a member
        ]
        if self._tls is not None:
            args += ["--client-cert-auth", "--trusted-ca-file", self._tls.client_ca_file,
                     "--cert-file", self._tls.cert_file, "--key-file", self._tls.key_file,
                     "--listen-metrics-urls", self._health_base()]
        # etcd logs to stderr; keep it in the data dir so start failures can quote it.
        with open(self._log, "ab") as log:
            self._proc = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
        try:
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self._start_timeout
        while time.monotonic() < deadline:
            assert self._proc is not None
            if self._proc.poll() is not None:
                raise UnavailableError(
                    f"etcd exited with code {self._proc.returncode}: {self._log_tail()}"
                )
            if self._healthy():
                return
            time.sleep(0.05)
        raise UnavailableError(
            f"etcd did not become healthy within {self._start_timeout}s: {self._log_tail()}"
        )

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self._health_base()}/health", timeout=1.0) as resp:
                return b'"true"' in resp.read()
        except (urllib.error.URLError, OSError):
            return False

    def _health_base(self) -> str:
        return f"http://{HOST}:{self.metrics_port}" if self._tls else self.endpoint

    def _log_tail(self) -> str:
        if self._log is None or not self._log.exists():
            return "(no log)"
        return self._log.read_text(errors="replace")[-2000:]

    def kill(self) -> None:
        """SIGKILL etcd (an outage), keeping its data directory until `stop()`."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()

    def stop(self) -> None:
        """Terminate etcd, wait for it and remove its data directory."""
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.terminate()
                try:
                    self._proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
                    self._proc.wait()
            self._proc = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> EtcdServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
