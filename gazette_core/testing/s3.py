"""A moto S3 server on loopback for tests: dummy credentials, a bucket, a store URL.

`moto_server()` starts `ThreadedMotoServer` on 127.0.0.1 with a free port and
sets dummy AWS credentials and region in this process's environment
(restored on exit), so boto3 never looks for real ones. `new_bucket()`
creates a bucket there and returns an `S3Server` whose `store_url` is
`s3://<bucket>/<prefix>/?endpoint=<server>`; `moto_s3()` does both.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from gazette_core.testing.env import patched_env

DUMMY_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
             "AWS_DEFAULT_REGION": "us-east-1"}
# Variables that would point boto3 at real credentials or a real endpoint.
HIDDEN_ENV = ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_ENDPOINT_URL",
              "AWS_ENDPOINT_URL_S3")
_buckets = itertools.count(1)


@dataclass(frozen=True)
class S3Server:
    """A running moto server and the bucket made for the test."""

    endpoint: str
    bucket: str
    prefix: str

    @property
    def store_url(self) -> str:
        return s3_store_url(self.bucket, self.prefix, self.endpoint)

    def client(self) -> Any:
        """A plain boto3 S3 client on the server (path-style, like the store)."""
        return s3_client(self.endpoint)


def s3_store_url(bucket: str, prefix: str, endpoint: str) -> str:
    """`s3://<bucket>/<prefix>/?endpoint=<url-encoded endpoint>` (`prefix` may be empty)."""
    path = f"{prefix.strip('/')}/" if prefix.strip("/") else ""
    return f"s3://{bucket}/{path}?endpoint={quote(endpoint, safe='')}"


def s3_client(endpoint: str) -> Any:
    import boto3
    import botocore.config

    return boto3.client("s3", endpoint_url=endpoint, region_name=DUMMY_ENV["AWS_DEFAULT_REGION"],
                        config=botocore.config.Config(s3={"addressing_style": "path"}))


@contextmanager
def dummy_credentials() -> Iterator[None]:
    """Dummy AWS credentials in os.environ for the duration; the old values come back."""
    with patched_env(DUMMY_ENV, HIDDEN_ENV):
        yield


@contextmanager
def moto_server() -> Iterator[str]:
    """A moto server on 127.0.0.1 (a free port) with dummy credentials; yields its endpoint."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    with dummy_credentials():
        server.start()
        try:
            host, port = server.get_host_and_port()
            yield f"http://{host}:{port}"
        finally:
            server.stop()


def new_bucket(endpoint: str, bucket: str | None = None, prefix: str = "fragments") -> S3Server:
    """Create `bucket` (default: a fresh valid name) on the server at `endpoint`."""
    s3 = S3Server(endpoint, bucket or f"test-bucket-{next(_buckets)}", prefix)
    s3.client().create_bucket(Bucket=s3.bucket)
    return s3


@contextmanager
def moto_s3(bucket: str | None = None, prefix: str = "fragments") -> Iterator[S3Server]:
    """A moto server with `bucket` created: `moto_server()` and `new_bucket()` in one."""
    with moto_server() as endpoint:
        yield new_bucket(endpoint, bucket, prefix)
