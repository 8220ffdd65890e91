"""S3 store: fragments as objects of `s3://<bucket>/<prefix>/`.

See docs/design/fragments.md#store-urls.

boto3 lists, probes, deletes and signs; smart_open streams object contents,
so a read never holds a whole fragment in memory. Every blocking call runs
in a worker thread. Query parameters: `profile` (shared-credentials profile;
otherwise the SDK's default chain), `endpoint` (a custom endpoint such as
MinIO, always path-style), `region`, and the PUT options `acl`,
`storageclass`, `sse` and `ssekmskeyid`. Importing this module registers the
`s3` scheme with the store registry.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from typing import IO, Any, TypeVar

import boto3
import botocore.config
import botocore.exceptions
import smart_open

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.fragment_ext import content_path
from gazette_core.broker.stores.base import (
    FragmentStore,
    StoreError,
    StoreNotFoundError,
    StorePermissionError,
    parse_listing,
)
from gazette_core.broker.stores.registry import StoreAdapter, register_adapter
from gazette_core.broker.stores.url import StoreURL
from gazette_core.errors import ValidationError

READ_CHUNK = 1 << 20
# Keys per ListObjectsV2 request (the S3 maximum).
LIST_PAGE_SIZE = 1000
PARAMS = frozenset({"profile", "endpoint", "region", "acl", "storageclass", "sse",
                    "ssekmskeyid"})
# PutObject arguments set from query parameters.
PUT_ARGS = {"acl": "ACL", "storageclass": "StorageClass", "sse": "ServerSideEncryption",
            "ssekmskeyid": "SSEKMSKeyId"}
DENIED_CODES = frozenset({"AccessDenied", "403", "Forbidden", "AllAccessDisabled",
                          "InvalidAccessKeyId", "SignatureDoesNotMatch"})
MISSING_CODES = frozenset({"NoSuchKey", "404", "NotFound"})
T = TypeVar("T")


class S3Store(FragmentStore):
    """Fragments stored as objects under a key prefix of one S3 bucket."""

    def __init__(self, url: StoreURL, client: Any) -> None:
        self.url = url.raw
        self.bucket = url.host
        self.prefix = url.prefix
        self._rewrite = url.rewrite
        self._client = client
        self._put_args = {arg: url.params[name] for name, arg in PUT_ARGS.items()
                          if url.params.get(name)}

    def key_of(self, fragment: pb.Fragment) -> str:
        """The object key holding `fragment`."""
        return self.prefix + self._rewrite.apply(content_path(fragment))

    async def _run(self, what: str, fn: Callable[[], T]) -> T:
        try:
            return await asyncio.to_thread(fn)
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError,
                OSError, ValueError) as exc:
            raise _store_error(f"s3 store {self.url!r}: {what}", exc) from exc

    async def put(
        self, fragment: pb.Fragment, data: bytes, content_encoding: str | None = None
    ) -> None:
        # Content-Encoding lets the store (or an HTTP client) decompress
        # GZIP_OFFLOAD_DECOMPRESSION fragments on the fly.
        key = self.key_of(fragment)
        args = dict(self._put_args)
        if content_encoding:
            args["ContentEncoding"] = content_encoding
        await self._run(f"put {key}", lambda: self._client.put_object(
            Bucket=self.bucket, Key=key, Body=data, **args))

    async def exists(self, fragment: pb.Fragment) -> bool:
        key = self.key_of(fragment)
        try:
            await self._run(f"head {key}", lambda: self._client.head_object(
                Bucket=self.bucket, Key=key))
        except StoreNotFoundError:
            return False
        return True

    async def list(self, journal: str) -> list[pb.Fragment]:
        prefix = self.prefix + self._rewrite.apply(journal + "/")
        objects = await self._run(f"list {prefix}", lambda: list(self._walk(prefix)))
        return parse_listing(self.url, journal, objects)

    def _walk(self, prefix: str) -> Iterator[tuple[str, float]]:
        """(key relative to `prefix`, last-modified time) of every object under `prefix`."""
        pages = self._client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=prefix, PaginationConfig={"PageSize": LIST_PAGE_SIZE})
        for page in pages:
            for obj in page.get("Contents", ()):
                yield obj["Key"][len(prefix):], obj["LastModified"].timestamp()

    async def open(self, fragment: pb.Fragment) -> AsyncIterator[bytes]:
        key = self.key_of(fragment)
        stream = await self._run(f"open {key}", lambda: self._open_stream(key))
        try:
            while chunk := await self._run(f"read {key}", lambda: stream.read(READ_CHUNK)):
                yield chunk
        finally:
            stream.close()

    def _open_stream(self, key: str) -> IO[bytes]:
        # Stored bytes exactly as written: smart_open would otherwise gunzip
        # keys ending in ".gz" by their extension.
        stream: IO[bytes] = smart_open.open(
            f"s3://{self.bucket}/{key}", "rb", compression="disable",
            transport_params={"client": self._client, "buffer_size": READ_CHUNK})
        return stream

    async def delete(self, fragment: pb.Fragment) -> None:
        key = self.key_of(fragment)
        # S3 reports deleting a missing key as success, so ask first: prune
        # tells "already gone" apart from "deleted". A principal allowed to
        # delete but not to read gets a 403 here and still goes on to delete.
        try:
            await self._run(f"delete {key}", lambda: self._client.head_object(
                Bucket=self.bucket, Key=key))
        except StorePermissionError:
            pass
        await self._run(f"delete {key}", lambda: self._client.delete_object(
            Bucket=self.bucket, Key=key))

    def sign_get(self, fragment: pb.Fragment, ttl_seconds: float) -> str:
        key = self.key_of(fragment)
        try:
            url: str = self._client.generate_presigned_url(
                "get_object", Params={"Bucket": self.bucket, "Key": key},
                ExpiresIn=max(1, int(ttl_seconds)))
        except botocore.exceptions.BotoCoreError as exc:
            raise _store_error(f"s3 store {self.url!r}: sign {key}", exc) from exc
        return url


def _store_error(what: str, exc: BaseException) -> StoreError:
    """`exc` (or the boto error smart_open wrapped in it) as the matching StoreError."""
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, botocore.exceptions.ClientError):
        cause = cause.__cause__ or cause.__context__
    if isinstance(cause, botocore.exceptions.ClientError):
        error = cause.response.get("Error", {})
        code = str(error.get("Code", ""))
        detail = f"{what}: {code}: {error.get('Message') or cause}"
        if code in DENIED_CODES:
            return StorePermissionError(detail)
        if code in MISSING_CODES:
            return StoreNotFoundError(detail)
        return StoreError(detail)
    return StoreError(f"{what}: {exc}")


def new_client(params: dict[str, str]) -> Any:
    """A boto3 S3 client configured by a store URL's query parameters."""
    try:
        session = boto3.session.Session(profile_name=params.get("profile") or None)
    except botocore.exceptions.BotoCoreError as exc:
        raise ValidationError("store", f"cannot load AWS profile: {exc}") from exc
    addressing = "path" if params.get("endpoint") else "auto"
    config = botocore.config.Config(signature_version="s3v4",
                                    s3={"addressing_style": addressing})
    try:
        return session.client("s3", region_name=params.get("region") or None,
                              endpoint_url=params.get("endpoint") or None, config=config)
    except (botocore.exceptions.BotoCoreError, ValueError) as exc:
        raise ValidationError("store", f"cannot create an S3 client: {exc}") from exc


def build(url: StoreURL, file_root: str) -> S3Store:
    """The registry's constructor for `s3://` URLs (`file_root` is unused)."""
    return S3Store(url, new_client(url.params))


register_adapter("s3", StoreAdapter(build, params=PARAMS))
