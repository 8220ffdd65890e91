"""The local stack's S3 emulator (`gazctl local up --s3`): a moto server process.

moto runs as `python -m moto.server` on 127.0.0.1, detached like etcd and the
brokers, so it outlives the gazctl command that started it. Its credentials
are dummy keys, given to the brokers' environment; the bucket `BUCKET` is
created once the server answers. moto keeps objects in memory: stopping the
stack loses what was stored in the bucket.
"""

from __future__ import annotations

import sys
import urllib.error
import urllib.request
from typing import Any

from gazette_core.testing.s3 import s3_store_url

MARKER = "moto.server"
BUCKET = "gazette-local"
PREFIX = "fragments"
# What brokers (and `gazctl local env` users) need to reach the emulator. Disabling
# instance metadata keeps the SDK from probing a cloud metadata address for credentials.
ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
       "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}


def argv(port: int) -> list[str]:
    """The command line of a moto server on 127.0.0.1:`port`."""
    return [sys.executable, "-m", MARKER, "-H", "127.0.0.1", "-p", str(port)]


def serves(endpoint: str) -> bool:
    """Whether the server at `endpoint` answers HTTP (any status counts)."""
    try:
        with urllib.request.urlopen(endpoint + "/", timeout=1):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


def store_url(endpoint: str) -> str:
    """The stack's S3 store URL: `s3://gazette-local/fragments/?endpoint=<endpoint>`."""
    return s3_store_url(BUCKET, PREFIX, endpoint)


def client(endpoint: str) -> Any:
    """A boto3 client of the emulator with its dummy keys (whatever this shell has set)."""
    import boto3
    import botocore.config

    return boto3.client(
        "s3", endpoint_url=endpoint, region_name=ENV["AWS_DEFAULT_REGION"],
        aws_access_key_id=ENV["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=ENV["AWS_SECRET_ACCESS_KEY"],
        config=botocore.config.Config(s3={"addressing_style": "path"}))


def ensure_bucket(endpoint: str) -> None:
    """Create the stack's bucket unless it exists (a restarted emulator starts empty)."""
    import botocore.exceptions

    s3 = client(endpoint)
    try:
        s3.head_bucket(Bucket=BUCKET)
    except botocore.exceptions.ClientError:
        s3.create_bucket(Bucket=BUCKET)
