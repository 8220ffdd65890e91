"""A gcp-storage-emulator server on loopback for tests: a bucket and a `gs://` store URL.

`gcs_emulator()` runs the emulator in this process (in memory, 127.0.0.1,
a free port) and points the SDK at it through `STORAGE_EMULATOR_HOST`
(restored on exit), which makes google-cloud-storage use anonymous
credentials and never look for real ones. `new_bucket()` creates a
bucket there and returns a `GCSServer` whose `store_url` is
`gs://<bucket>/<prefix>/`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from gazette_core.testing.env import patched_env

EMULATOR_ENV = "STORAGE_EMULATOR_HOST"
PROJECT = "gazette-test"
# Variables that would give the SDK real credentials or another endpoint.
HIDDEN_ENV = ("GOOGLE_APPLICATION_CREDENTIALS", "API_ENDPOINT_OVERRIDE")
_buckets = itertools.count(1)


@dataclass(frozen=True)
class GCSServer:
    """A running emulator and the bucket made for the test."""

    endpoint: str
    bucket: str
    prefix: str

    @property
    def store_url(self) -> str:
        path = f"{self.prefix.strip('/')}/" if self.prefix.strip("/") else ""
        return f"gs://{self.bucket}/{path}"

    def client(self) -> Any:
        """A plain google-cloud-storage client on the emulator (anonymous)."""
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage

        return storage.Client(project=PROJECT, credentials=AnonymousCredentials())


@contextmanager
def emulator_env(endpoint: str) -> Iterator[None]:
    """STORAGE_EMULATOR_HOST=`endpoint` for the duration; the old environment comes back."""
    with patched_env({EMULATOR_ENV: endpoint}, HIDDEN_ENV):
        yield


@contextmanager
def gcs_emulator() -> Iterator[str]:
    """An in-memory emulator on 127.0.0.1 (a free port); yields its endpoint."""
    from gcp_storage_emulator.server import create_server

    server = create_server("127.0.0.1", 0, in_memory=True)
    server.start()
    try:
        # Port 0 lets the OS choose; the bound address is only on the HTTP server.
        port = server._api._httpd.server_address[1]
        endpoint = f"http://127.0.0.1:{port}"
        with emulator_env(endpoint):
            yield endpoint
    finally:
        server.stop()


def new_bucket(endpoint: str, bucket: str | None = None, prefix: str = "fragments"
               ) -> GCSServer:
    """Create `bucket` (default: a fresh valid name) on the emulator at `endpoint`."""
    gcs = GCSServer(endpoint, bucket or f"test-bucket-{next(_buckets)}", prefix)
    gcs.client().create_bucket(gcs.bucket)
    return gcs


@contextmanager
def gcs_bucket(bucket: str | None = None, prefix: str = "fragments") -> Iterator[GCSServer]:
    """An emulator with `bucket` created: `gcs_emulator()` and `new_bucket()` in one."""
    with gcs_emulator() as endpoint:
        yield new_bucket(endpoint, bucket, prefix)
