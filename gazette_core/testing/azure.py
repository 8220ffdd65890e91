"""An Azurite blob server on loopback for tests: a container and an `azure://` store URL.

`azurite()` runs `azurite-blob` (installed by `make azurite` under
`.cache/azurite`, or named by AZURITE_BLOB) in memory on 127.0.0.1 with a
free port, always with `--disableTelemetry --skipApiVersionCheck` so it
never reaches outside this machine, and sets AZURE_STORAGE_CONNECTION_STRING
to Azurite's well-known development account (restored on exit), which the
`azure://` store uses instead of AZURE_ACCOUNT_NAME / AZURE_ACCOUNT_KEY.
`new_container()` creates a container and returns an `AzuriteServer` whose
`store_url` is `azure://<container>/<prefix>/`.
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gazette_core.testing.env import patched_env
from gazette_core.testing.etcd import free_port

REPO = Path(__file__).resolve().parents[2]
LOCAL_BIN = REPO / ".cache" / "azurite" / "node_modules" / ".bin" / "azurite-blob"
CONNECTION_ENV = "AZURE_STORAGE_CONNECTION_STRING"
# Azurite's fixed development account (public, documented; it guards nothing).
ACCOUNT = "devstoreaccount1"
ACCOUNT_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
               "KBHBeksoGMGw==")
HIDDEN_ENV = ("AZURE_ACCOUNT_NAME", "AZURE_ACCOUNT_KEY")
START_TIMEOUT_S = 30.0
_containers = itertools.count(1)


@dataclass(frozen=True)
class AzuriteServer:
    """A running Azurite and the container made for the test."""

    endpoint: str  # the account's blob endpoint, http://127.0.0.1:<port>/devstoreaccount1
    container: str
    prefix: str

    @property
    def store_url(self) -> str:
        path = f"{self.prefix.strip('/')}/" if self.prefix.strip("/") else ""
        return f"azure://{self.container}/{path}"

    def client(self) -> Any:
        """A plain azure-storage-blob ContainerClient on the test's container."""
        from azure.storage.blob import BlobServiceClient

        return BlobServiceClient.from_connection_string(
            connection_string(self.endpoint)).get_container_client(self.container)


def connection_string(endpoint: str) -> str:
    return (f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};"
            f"BlobEndpoint={endpoint};")


def azurite_command() -> str:
    """The azurite-blob executable: AZURITE_BLOB, the project-local install, or PATH."""
    found = os.environ.get("AZURITE_BLOB") or (
        str(LOCAL_BIN) if LOCAL_BIN.exists() else shutil.which("azurite-blob"))
    if not found:
        raise RuntimeError(
            f"azurite-blob is not installed: run `make azurite` (expects {LOCAL_BIN})")
    return found


def _await_listening(proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = log.read_text(errors="replace").strip()
            raise RuntimeError(f"azurite-blob exited with {proc.returncode}: {out}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"azurite-blob did not listen on 127.0.0.1:{port} "
                       f"within {START_TIMEOUT_S:g}s")


@contextmanager
def connection_env(endpoint: str) -> Iterator[None]:
    """AZURE_STORAGE_CONNECTION_STRING for `endpoint` for the duration; then the old env."""
    with patched_env({CONNECTION_ENV: connection_string(endpoint)}, HIDDEN_ENV):
        yield


@contextmanager
def azurite() -> Iterator[str]:
    """An in-memory azurite-blob on 127.0.0.1 (a free port); yields the account endpoint."""
    port = free_port()
    argv = [azurite_command(), "--blobHost", "127.0.0.1", "--blobPort", str(port),
            "--inMemoryPersistence", "--silent", "--disableTelemetry", "--skipApiVersionCheck"]
    # Output goes to a file, not a pipe nobody drains, which could fill and stall it.
    with tempfile.TemporaryDirectory(prefix="azurite-") as workdir, \
            open(Path(workdir) / "azurite.log", "wb") as log:
        proc = subprocess.Popen(argv, cwd=workdir, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
        try:
            _await_listening(proc, port, Path(log.name))
            endpoint = f"http://127.0.0.1:{port}/{ACCOUNT}"
            with connection_env(endpoint):
                yield endpoint
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def new_container(endpoint: str, container: str | None = None, prefix: str = "fragments"
                  ) -> AzuriteServer:
    """Create `container` (default: a fresh valid name) on the Azurite at `endpoint`."""
    server = AzuriteServer(endpoint, container or f"test-container-{next(_containers)}", prefix)
    server.client().create_container()
    return server


@contextmanager
def azurite_container(container: str | None = None, prefix: str = "fragments"
                      ) -> Iterator[AzuriteServer]:
    """An Azurite with `container` created: `azurite()` and `new_container()` in one."""
    with azurite() as endpoint:
        yield new_container(endpoint, container, prefix)
